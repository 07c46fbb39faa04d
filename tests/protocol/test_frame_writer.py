"""One frame writer for both endpoints (`protocol.framing.FrameWriter`): the
harness endpoint frames its bodies with it, the editor endpoint passes
pygls's already-framed bytes and its own replies through the same lock."""

from __future__ import annotations

import os

import pytest

from mecha.protocol.framing import FrameWriter, encode_frame


def test_bodies_are_framed_and_framed_bytes_pass_through_unchanged():
    # Pins: two writers, one of which framed a second time what pygls framed.
    r, w = os.pipe()
    try:
        writer = FrameWriter(w)
        writer.write(b'{"a":1}')
        writer.write_framed(encode_frame(b'{"b":2}'))
        os.close(w)
        w = -1
        data = os.read(r, 1 << 16)
    finally:
        os.close(r)
        if w != -1:
            os.close(w)
    assert data == b'Content-Length: 7\r\n\r\n{"a":1}Content-Length: 7\r\n\r\n{"b":2}'


def test_a_peer_gone_is_an_error_for_the_harness_endpoint_and_silence_for_the_editors():
    # Pins: the editor endpoint's writer raising into pygls when the editor
    # closed its end, or the harness endpoint's hiding that its harness left.
    r, w = os.pipe()
    os.close(r)
    try:
        with pytest.raises(BrokenPipeError):
            FrameWriter(w).write(b"{}")
        FrameWriter(w, quiet_when_gone=True).write(b"{}")
        FrameWriter(w, quiet_when_gone=True).write_framed(encode_frame(b"{}"))
    finally:
        os.close(w)
