"""How texts are stored: Zstandard frames, zlib from older stores, raw; and what a damaged or hostile text gets."""

from __future__ import annotations

import json
import os
import random
import struct
import zlib

import pytest
import zstandard

from referee.store import StoreError, _codec
from referee.store._codec import (
    PACKED_RAW,
    PACKED_ZLIB,
    PACKED_ZSTD,
    _pack,
    _unpack,
    max_text_bytes,
    pack_many,
)

ROW = json.dumps({"id": "case-1", "rationale": "Go to Settings > Security > Reset password. " * 400}).encode()


@pytest.mark.parametrize("size", [0, 255, 256, 400, 4096, 4097, 200_000])
def test_texts_read_back_exactly_and_pack_at_least_as_small_as_zlib_did(size: int) -> None:
    for data in (ROW[:size], os.urandom(size)):
        packed, stored = _pack(data)
        assert _unpack(packed, stored) == data
        if packed:
            assert len(stored) <= len(zlib.compress(data, 1)) + 8
    # From 256 bytes on a compressible text is a Zstandard frame; an incompressible one stays as it is.
    assert _pack(ROW[:size])[0] == (PACKED_ZSTD if size >= 256 else PACKED_RAW)
    assert _pack(os.urandom(max(size, 300)))[0] == PACKED_RAW


@pytest.mark.parametrize("batch_call", [True, False], ids=["one-call", "one-call-each"])
def test_a_batch_packs_to_the_bytes_each_text_packs_to(batch_call: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Small, incompressible, compressible and repeated texts side by side: a batch gives what ``_pack`` gives each,
    # with the C backend's batch call and without it (the cffi backend has none), on another thread too.
    import threading

    texts = [ROW[:n] for n in (0, 100, 255, 256, 300, 1000, 4097, 200_000)]
    texts += [os.urandom(n) for n in (10, 300, 5000)] + [ROW[:1000], b""]
    texts = texts * 3
    z = _codec._codec()
    calls: list[int] = []
    if batch_call:
        if z.compress_many is None:
            pytest.skip("this zstandard backend has no batch call (the cffi one); the other case covers it")
        real = z.compress_many

        def counted(datas: list[bytes | bytearray | memoryview],
                    threads: int) -> zstandard.BufferWithSegmentsCollection:
            calls.append(len(datas))
            return real(datas, threads)

        monkeypatch.setattr(z, "compress_many", counted)
    else:
        monkeypatch.setattr(z, "compress_many", None)
    assert pack_many(texts) == [_pack(t) for t in texts]
    assert calls == ([sum(len(t) >= 256 for t in texts)] if batch_call else [])
    assert pack_many(texts[3:6]) == [_pack(t) for t in texts[3:6]]  # too few for a batch call: one call each
    assert len(calls) == (1 if batch_call else 0)
    assert pack_many([]) == []
    elsewhere: list[list[tuple[int, bytes]]] = []
    worker = threading.Thread(target=lambda: elsewhere.append(pack_many(texts)))
    worker.start()
    worker.join()
    assert elsewhere == [[_pack(t) for t in texts]]
    assert {p for p, _ in elsewhere[0]} == {PACKED_RAW, PACKED_ZSTD}
    assert all(_unpack(p, d) == t for (p, d), t in zip(elsewhere[0], texts, strict=True))


def test_zlib_texts_from_stores_before_0004_still_read() -> None:
    assert _unpack(PACKED_ZLIB, zlib.compress(ROW, 1)) == ROW
    assert _unpack(PACKED_ZLIB, zlib.compress(ROW, 9)) == ROW


def test_texts_pack_alike_on_every_thread() -> None:
    # One compressor per thread (zstandard's objects must not be shared): each thread's frame reads anywhere.
    import threading

    out: dict[int, tuple[int, bytes]] = {}

    def work(i: int) -> None:
        out[i] = _pack(ROW[: 1000 + i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(_unpack(*out[i]) == ROW[: 1000 + i] for i in range(8))


def _frame_claiming(size: int) -> bytes:
    """A Zstandard frame whose header states ``size`` bytes of content, with a tiny payload."""
    frame = bytearray(zstandard.ZstdCompressor(level=1, write_content_size=True).compress(b"x" * 300))
    # Frame header: magic (4 bytes), descriptor; rewrite it to say "single segment, 8-byte content size".
    desc = 0b11100000
    return bytes(frame[:4]) + bytes([desc]) + struct.pack("<Q", size) + bytes(frame[5 + _header_after_descriptor(frame):])


def _header_after_descriptor(frame: bytearray) -> int:
    """Bytes of the frame header after its descriptor: window descriptor, dictionary id, content size."""
    desc = frame[4]
    single = (desc >> 5) & 1
    flag = desc >> 6
    window = 0 if single else 1
    dict_len = (0, 1, 2, 4)[desc & 3]
    fcs = (1 if single else 0, 2, 4, 8)[flag]
    return window + dict_len + fcs


def test_a_zstandard_bomb_is_refused_before_anything_is_expanded() -> None:
    bomb = _frame_claiming(64 << 30)  # says 64 GiB
    assert zstandard.frame_content_size(bomb) == 64 << 30
    with pytest.raises(StoreError, match="would expand to 68,719,476,736 bytes, past the bound"):
        _unpack(PACKED_ZSTD, bomb)


def test_a_frame_that_does_not_state_its_size_or_lies_about_it_is_refused() -> None:
    unsized = zstandard.ZstdCompressor(level=1, write_content_size=False).compress(ROW)
    with pytest.raises(StoreError, match="does not state its size"):
        _unpack(PACKED_ZSTD, unsized)
    liar = _frame_claiming(10)  # the payload holds 300 bytes
    with pytest.raises(StoreError, match="cannot be decompressed"):
        _unpack(PACKED_ZSTD, liar)
    # Noise behind the magic number, seeded: whatever its header says, a StoreError or bytes within the bound,
    # never another exception. About 1 in 4,000 such frames is a valid one (an empty payload, say), which no
    # codec can tell from a stored text: the text's hash, held by `store check`, is what catches that.
    rng = random.Random(20261207)
    refused = 0
    for _ in range(4000):
        try:
            out = _unpack(PACKED_ZSTD, b"\x28\xb5\x2f\xfd" + rng.randbytes(40))
        except StoreError as exc:
            assert "the store is damaged" in str(exc)
            refused += 1
        else:
            assert len(out) <= max_text_bytes()
    assert refused >= 3960


def test_a_zlib_bomb_is_cut_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    # 5 MB of zeros: a few kB of zlib, expanding past a 4 MB bound (the row bound lowered so the floor is what counts)
    monkeypatch.setattr("referee.store._codec._TEXT_FLOOR", 4 << 20)
    assert max_text_bytes() == 4 << 20
    bomb = zlib.compress(b"\0" * (5 << 20), 9)
    assert len(bomb) < 10_000
    with pytest.raises(StoreError, match="past the bound of 4,194,304 bytes"):
        _unpack(PACKED_ZLIB, bomb)
    assert _unpack(PACKED_ZLIB, zlib.compress(b"\0" * (4 << 20), 9)) == b"\0" * (4 << 20)  # at the bound: read


def test_damaged_texts_say_so() -> None:
    whole = zlib.compress(ROW, 1)
    with pytest.raises(StoreError, match="cut short"):
        _unpack(PACKED_ZLIB, whole[: len(whole) // 2])
    with pytest.raises(StoreError, match="cannot be decompressed"):
        _unpack(PACKED_ZLIB, b"not zlib at all")
    with pytest.raises(StoreError, match="packed as 7, which this referee does not know"):
        _unpack(7, b"{}")


def test_the_read_bound_follows_a_higher_row_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_STORE_MAX_ROW_BYTES", str(1 << 30))
    assert max_text_bytes() == 1 << 30
    monkeypatch.delenv("REFEREE_STORE_MAX_ROW_BYTES")
    assert max_text_bytes() == 256 << 20
