"""Readers and writers. Only this package and ``certsym.cli`` touch files."""

from certsym.io.params import (
    LoadedInput,
    dump_layered,
    dump_network,
    load_inputs,
    load_networks,
    network_to_json,
    parse_point,
    read_input,
    read_text,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)

__all__ = [
    "dump_layered",
    "dump_network",
    "LoadedInput",
    "load_inputs",
    "load_networks",
    "network_to_json",
    "parse_point",
    "read_input",
    "read_text",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_text_atomic",
]
