"""Readers and writers. Only this package and ``certsym.cli`` touch files."""

from certsym.io.params import (
    dump_network,
    load_networks,
    network_to_json,
    parse_point,
    read_input,
    read_text,
    write_json_atomic,
    write_text_atomic,
)

__all__ = [
    "dump_network",
    "load_networks",
    "network_to_json",
    "parse_point",
    "read_input",
    "read_text",
    "write_json_atomic",
    "write_text_atomic",
]
