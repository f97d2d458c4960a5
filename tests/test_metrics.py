"""Tests for crl_jax.metrics and crl_jax.event_files.

Event files are checked independently of the writer: CRC32C against the
RFC 3720 test vectors and a bit-by-bit implementation, records parsed by a
plain struct reader, and payloads decoded by the `protobuf` runtime from
descriptors of TensorFlow's Event/Summary/SessionLog messages.
"""

from __future__ import annotations

import glob
import io
import json
import math
import os
import struct

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from crl_jax import event_files, metrics


def _bitwise_crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 * (crc & 1))
    return crc ^ 0xFFFFFFFF


def _mask(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def test_crc32c_matches_rfc3720_vectors_and_bitwise_reference():
    assert event_files.crc32c(b"\x00" * 32) == 0x8A9136AA
    assert event_files.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert event_files.crc32c(bytes(range(32))) == 0x46DD794E
    assert event_files.crc32c(b"123456789") == 0xE3069283
    data = np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8).tobytes()
    assert event_files.crc32c(data) == _bitwise_crc32c(data)
    assert event_files.masked_crc32c(data) == _mask(_bitwise_crc32c(data))


def _event_class():
    """Event message class built from a descriptor (fields as in event.proto)."""
    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="test_event.proto", package="t")

    def message(name, fields):
        msg = proto.message_type.add(name=name)
        for fname, number, ftype, label, type_name in fields:
            field = msg.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                field.type_name = type_name

    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message("Value", [("tag", 1, F.TYPE_STRING, opt, None),
                      ("simple_value", 2, F.TYPE_FLOAT, opt, None)])
    message("Summary", [("value", 1, F.TYPE_MESSAGE, rep, ".t.Value")])
    message("SessionLog", [("status", 1, F.TYPE_INT32, opt, None)])
    message("Event", [("wall_time", 1, F.TYPE_DOUBLE, opt, None),
                      ("step", 2, F.TYPE_INT64, opt, None),
                      ("file_version", 3, F.TYPE_STRING, opt, None),
                      ("summary", 5, F.TYPE_MESSAGE, opt, ".t.Summary"),
                      ("session_log", 7, F.TYPE_MESSAGE, opt, ".t.SessionLog")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("t.Event"))


def _read_events(path):
    """Plain TFRecord reader with CRC checks, then protobuf decoding."""
    event_cls = _event_class()
    raw = open(path, "rb").read()
    events, pos = [], 0
    while pos < len(raw):
        header = raw[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", raw[pos + 8:pos + 12])
        assert header_crc == _mask(_bitwise_crc32c(header))
        data = raw[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", raw[pos + 12 + length:pos + 16 + length])
        assert data_crc == _mask(_bitwise_crc32c(data))
        events.append(event_cls.FromString(data))
        pos += 16 + length
    return events


def _scalars(events):
    return [(e.step, {v.tag: v.simple_value for v in e.summary.value})
            for e in events if e.HasField("summary")]


def test_jsonl_and_event_file_hold_what_was_written(tmp_path):
    with metrics.MetricsWriter(str(tmp_path)) as writer:
        writer.write(1, {"success": 0.25, "loss": np.float32(1.5), "episodes": 8})
        writer.write(2, {"success": np.float64(0.5), "flag": True, "neg": -3})
        writer.write(3, {"loss": float("nan")})
    rows = metrics.read_metrics(str(tmp_path / "metrics.jsonl"))
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert rows[0]["success"] == 0.25 and rows[0]["loss"] == 1.5 and rows[0]["episodes"] == 8
    assert isinstance(rows[0]["episodes"], int) and rows[1]["flag"] is True
    assert math.isnan(rows[2]["loss"]) and "time" in rows[0]

    (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    events = _read_events(path)
    assert events[0].file_version == "brain.Event:2"
    assert _scalars(events) == [
        (1, {"success": 0.25, "loss": 1.5, "episodes": 8.0}),
        (2, {"success": 0.5, "flag": 1.0, "neg": -3.0}),
        (3, {"loss": pytest.approx(float("nan"), nan_ok=True)}),
    ]
    # The writer's own reader agrees with the independent one.
    assert len(list(event_files.iter_event_records(path))) == len(events)


def test_negative_and_large_steps_encode_as_int64(tmp_path):
    writer = event_files.EventFileWriter(str(tmp_path))
    writer.add_scalars(-1, {"a": 1.0})
    writer.add_scalars(2**40 + 3, {"a": 2.0})
    writer.close()
    assert [s for s, _ in _scalars(_read_events(writer.path))] == [-1, 2**40 + 3]


def test_corrupted_record_is_detected(tmp_path):
    writer = event_files.EventFileWriter(str(tmp_path))
    writer.add_scalars(1, {"a": 1.0})
    writer.close()
    raw = bytearray(open(writer.path, "rb").read())
    raw[-6] ^= 0x01  # a byte inside the last record's payload
    open(writer.path, "wb").write(bytes(raw))
    with pytest.raises(ValueError, match="CRC"):
        list(event_files.iter_event_records(writer.path))


def test_truncate_after_resume(tmp_path):
    writer = metrics.MetricsWriter(str(tmp_path))
    for step in range(1, 6):
        writer.write(step, {"x": float(step)})
    writer.close()
    # Simulate a crash that tore the last line.
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"step": 6, "x"')
    writer = metrics.MetricsWriter(str(tmp_path))
    assert [r["step"] for r in metrics.read_metrics(writer.path)] == [1, 2, 3, 4, 5]
    assert writer.truncate_after(3) == 2
    writer.write(4, {"x": 40.0})
    writer.close()
    rows = metrics.read_metrics(writer.path)
    assert [(r["step"], r["x"]) for r in rows] == [(1, 1.0), (2, 2.0), (3, 3.0), (4, 40.0)]
    with open(writer.path) as f:  # every line is complete JSON
        assert all(json.loads(line) for line in f)

    files = sorted(glob.glob(str(tmp_path / "events.out.tfevents.*")), key=os.path.getmtime)
    resumed = [e for path in files for e in _read_events(path)
               if e.HasField("session_log") or e.HasField("summary")]
    starts = [e.step for e in resumed if e.session_log.status == 1]  # 1 = START
    assert starts == [4]
    assert _scalars(resumed)[-1] == (4, {"x": 40.0})


def test_write_rejects_bad_values(tmp_path):
    with metrics.MetricsWriter(str(tmp_path), use_tensorboard=False) as writer:
        with pytest.raises(ValueError, match="'vec'.*shape \\(3,\\)"):
            writer.write(1, {"vec": np.zeros(3)})
        with pytest.raises(ValueError, match="reserved"):
            writer.write(1, {"step": 1})
        with pytest.raises(ValueError, match="'name'"):
            writer.write(1, {"name": "abc"})
    assert metrics.read_metrics(str(tmp_path / "metrics.jsonl")) == []
    assert not glob.glob(str(tmp_path / "events.out.tfevents.*"))


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_bar_non_tty_prints_at_interval():
    clock, out = FakeClock(), io.StringIO()
    bar = metrics.ProgressBar(100, initial=20, keys=("success",), stream=out,
                              min_interval_s=10.0, clock=clock)
    assert not bar.is_tty
    clock.now = 4.0
    bar.update(24, {"success": 0.5, "ignored": 1})   # first update prints
    clock.now = 8.0
    bar.update(28)                                   # 4 s later: silent
    clock.now = 20.0
    bar.update(60, {"success": 0.75})                # 16 s later: prints
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    # 40 steps in 20 s since the bar started at step 20 -> 2 step/s, 40 left -> 20 s.
    assert "60/100" in lines[1] and " 60.0%" in lines[1]
    assert "2 step/s" in lines[1] and "ETA 20s" in lines[1]
    assert "success=0.75" in lines[1] and "ignored" not in lines[1]
    assert "[" + "#" * 14 + "-" * 10 + "]" in lines[1]
    clock.now = 21.0
    bar.update(100)                                  # finishing always prints
    assert out.getvalue().splitlines()[-1].count("100/100") == 1


def test_progress_bar_tty_redraws_in_place():
    clock, out = FakeClock(), io.StringIO()
    bar = metrics.ProgressBar(10, stream=out, is_tty=True, clock=clock)
    clock.now = 1.0
    bar.update(1)
    clock.now = 2.0
    bar.update(2)
    bar.close()
    text = out.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n") and text.count("\n") == 1
    assert "ETA 8s" in text  # 2 steps in 2 s, 8 left


def test_timer_and_phase_timings():
    clock = FakeClock()
    timings = metrics.PhaseTimings(clock=clock)
    for duration in (1.5, 2.0):
        with timings.time("rollout"):
            clock.now += duration
    with pytest.raises(RuntimeError):
        with timings.time("update"):
            clock.now += 0.25
            raise RuntimeError("boom")
    assert timings.pop_all() == {"time/rollout": 3.5, "time/update": 0.25}
    assert timings.pop_all() == {}

    totals = {}
    with metrics.Timer("a", totals, clock=clock) as timer:
        clock.now += 3.0
    assert timer.elapsed == 3.0 and totals == {"a": 3.0}
