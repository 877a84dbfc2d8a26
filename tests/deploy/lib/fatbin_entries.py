"""Prints the CUDA device code embedded in an ELF binary, one line per kind and
architecture with its count, e.g. "sm_90 cubin 6" and "compute_90 ptx 6".

    fatbin_entries.py BINARY

nvcc puts one fat binary per translation unit in the .nv_fatbin section (there
is no cuobjdump here to list them). Their format is undocumented; this reads it
as open-source readers do (checked against CUDA 13's nvcc output): a 16-byte
header (magic 0xBA55ED50, u16 version, u16 header size, u64 size of the
entries), then entries, each starting u16 kind (1 PTX, 2 ELF cubin), u16
version, u32 header size, u64 padded payload size, with the architecture (e.g.
90) as u32 at byte 28.
Exits 1 when the binary has no .nv_fatbin section.
"""
import collections
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KINDS = {1: "ptx", 2: "cubin"}


def section(elf: bytes, wanted: str) -> bytes:
    """The bytes of ELF64 little-endian section `wanted`, or b""."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_offset = headers[shstrndx][4]
    for name, _, _, _, offset, size in headers:
        end = elf.index(b"\0", names_offset + name)
        if elf[names_offset + name:end].decode() == wanted:
            return elf[offset:offset + size]
    return b""


def entries(fatbins: bytes):
    pos = 0
    while pos + 16 <= len(fatbins):
        magic, _, header_size, size = struct.unpack_from("<IHHQ", fatbins, pos)
        if magic != FATBIN_MAGIC:  # alignment padding between fat binaries
            pos += 8
            continue
        entry, end = pos + header_size, pos + header_size + size
        while entry < end:
            kind, _, entry_header, padded = struct.unpack_from("<HHIQ", fatbins, entry)
            arch, = struct.unpack_from("<I", fatbins, entry + 28)
            yield KINDS.get(kind, f"kind{kind}"), arch
            entry += entry_header + padded
        pos = end


def main() -> int:
    with open(sys.argv[1], "rb") as f:
        fatbins = section(f.read(), ".nv_fatbin")
    if not fatbins:
        print(f"{sys.argv[1]}: no .nv_fatbin section", file=sys.stderr)
        return 1
    for (kind, arch), count in sorted(collections.Counter(entries(fatbins)).items()):
        prefix = "compute" if kind == "ptx" else "sm"
        print(f"{prefix}_{arch} {kind} {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
