"""TensorBoard event files written by hand: TFRecord framing + scalar Event protos.

Neither TensorFlow nor tensorboardX is a dependency: the format is small and
frozen, and writing it directly keeps the install light.

Record framing (TFRecord):
    uint64 length (little endian) | uint32 masked_crc32c(length bytes)
    | data | uint32 masked_crc32c(data)
Protobuf fields used (tensorflow/core/util/event.proto, summary.proto):
    Event: wall_time=1 (double), step=2 (int64), file_version=3 (string),
           summary=5 (Summary), log_message=6 (unused), session_log=7 (SessionLog)
    Summary: value=1 (repeated Value); Value: tag=1 (string), simple_value=2 (float)
    SessionLog: status=1 (enum; START=1)
"""

from __future__ import annotations

import os
import socket
import struct
import time
from typing import Iterator, Mapping

# --------------------------------------------------------------------------- #
# CRC32C (Castagnoli), as TFRecord needs it
# --------------------------------------------------------------------------- #


def _make_crc32c_table() -> tuple[int, ...]:
    poly = 0x82F63B78  # reversed Castagnoli polynomial
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC32C_TABLE = _make_crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masking: rotate right by 15 and add a constant (mod 2**32)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# --------------------------------------------------------------------------- #
# Minimal protobuf encoding
# --------------------------------------------------------------------------- #


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 negatives are ten-byte two's complement
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _varint((field << 3) | 2) + _varint(len(payload)) + payload


def _encode_event(
    wall_time: float,
    step: int | None = None,
    file_version: str | None = None,
    scalars: Mapping[str, float] | None = None,
    session_start: bool = False,
) -> bytes:
    out = bytearray(_varint((1 << 3) | 1) + struct.pack("<d", wall_time))
    if step is not None:
        out += _varint(2 << 3) + _varint(step)
    if file_version is not None:
        out += _length_delimited(3, file_version.encode())
    if scalars:
        summary = b"".join(
            _length_delimited(
                1,
                _length_delimited(1, tag.encode())
                + _varint((2 << 3) | 5)
                + struct.pack("<f", value),
            )
            for tag, value in scalars.items()
        )
        out += _length_delimited(5, summary)
    if session_start:
        out += _length_delimited(7, _varint(1 << 3) + _varint(1))
    return bytes(out)


def _frame_record(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


class EventFileWriter:
    """Appends scalar summaries to one TensorBoard event file."""

    _counter = 0

    def __init__(self, log_dir: str):
        os.makedirs(log_dir, exist_ok=True)
        EventFileWriter._counter += 1
        name = (
            f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}"
            f".{os.getpid()}.{EventFileWriter._counter}"
        )
        self.path = os.path.join(log_dir, name)
        self._file = open(self.path, "ab")
        self._write(_encode_event(time.time(), step=0, file_version="brain.Event:2"))

    def _write(self, event: bytes) -> None:
        self._file.write(_frame_record(event))
        self._file.flush()

    def add_scalars(self, step: int, scalars: Mapping[str, float]) -> None:
        self._write(_encode_event(time.time(), step=step, scalars=scalars))

    def add_session_start(self, step: int) -> None:
        """TensorBoard drops already-loaded events with step >= `step` on reading this."""
        self._write(_encode_event(time.time(), step=step, session_start=True))

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()



def iter_event_records(path: str) -> Iterator[bytes]:
    """Payloads of a TFRecord file; raises ValueError on a bad length or data CRC."""
    with open(path, "rb") as f:
        while header := f.read(8):
            length_crc = f.read(4)
            if len(header) < 8 or length_crc != struct.pack("<I", masked_crc32c(header)):
                raise ValueError(f"{path}: torn header or length CRC mismatch")
            (length,) = struct.unpack("<Q", header)
            data = f.read(length)
            data_crc = f.read(4)
            if len(data) != length or data_crc != struct.pack("<I", masked_crc32c(data)):
                raise ValueError(f"{path}: data CRC mismatch")
            yield data
