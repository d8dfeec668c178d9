"""The checker's own readers of the files a certificate is bound to (docs/FORMATS.md), standard library only:
``files`` (the input file, npz and safetensors, the model record's rules), ``torchzip`` (torch archives, without
unpickling), ``onnx`` (the protobuf wire format and the strict data-flow graph); ``tensor`` is their leaf."""
