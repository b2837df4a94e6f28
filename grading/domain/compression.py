"""zstd helpers shared by everything that stores large blobs (trajectories, test output)."""

import zstandard

# Level 3 is zstd's default: ~10x on JSON text at several hundred MB/s on one core.
_LEVEL = 3


def compress(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=_LEVEL).compress(data)


def decompress(data: bytes) -> bytes:
    return zstandard.ZstdDecompressor().decompress(data)
