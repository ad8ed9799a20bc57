"""Coverage-guided fuzzing of ``pydp_synopsis.load`` with atheris (run by .ci/sanitize).

Each input is decoded as one structured mutation of a real record of every
kind (``tests/fixtures/*.pds``: a meta field, an array entry or payload
bytes replaced), wrapped with a valid checksum, written to a file and
loaded; a loaded object is then used (answers and error bound, or one
counter step).  Anything but a return, ``FormatError`` or a clean
``SynopsisError`` of the use is a finding: atheris stops and prints the
input, which becomes a regression fixture.  Against the AddressSanitizer /
UBSan build of the C core, an out-of-bounds read is a finding too.

Run::

    python tests/fuzz/fuzz_load.py -max_total_time=120
"""
import hashlib
import json
import os
import pathlib
import struct
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    import numpy as np

    import pydp_synopsis as ps

FIXTURES = sorted((pathlib.Path(__file__).resolve().parent.parent / "fixtures").glob("*.pds"))
RAWS = [p.read_bytes() for p in FIXTURES]
MAGIC = b"PDSYN\x00v1"
TMP = tempfile.mkdtemp(prefix="pds-fuzz-")
PATH = os.path.join(TMP, "f.pds")


def _value(fdp):
    pick = fdp.ConsumeIntInRange(0, 5)
    if pick == 0:
        return fdp.ConsumeIntInRange(-2**70, 2**70)
    if pick == 1:
        return fdp.ConsumeRegularFloat()
    if pick == 2:
        return fdp.ConsumeUnicodeNoSurrogates(6)
    if pick == 3:
        return [fdp.ConsumeIntInRange(-3, 2**65) for _ in range(fdp.ConsumeIntInRange(0, 9))]
    if pick == 4:
        return None
    return fdp.ConsumeBool()


def one_input(data):
    fdp = atheris.FuzzedDataProvider(data)
    raw = RAWS[fdp.ConsumeIntInRange(0, len(RAWS) - 1)]
    hlen = struct.unpack_from("<Q", raw, len(MAGIC))[0]
    head = json.loads(raw[len(MAGIC) + 8:len(MAGIC) + 8 + hlen])
    payload = bytearray(raw[len(MAGIC) + 8 + hlen:-32])
    for _ in range(fdp.ConsumeIntInRange(1, 3)):
        where = fdp.ConsumeIntInRange(0, 2)
        if where == 0 and head["meta"]:
            keys = sorted(head["meta"])
            head["meta"][keys[fdp.ConsumeIntInRange(0, len(keys) - 1)]] = _value(fdp)
        elif where == 1 and head["arrays"]:
            spec = head["arrays"][fdp.ConsumeIntInRange(0, len(head["arrays"]) - 1)]
            spec[["shape", "offset", "nbytes", "dtype"][fdp.ConsumeIntInRange(0, 3)]] = _value(fdp)
        elif payload:
            payload[fdp.ConsumeIntInRange(0, len(payload) - 1)] = fdp.ConsumeIntInRange(0, 255)
    text = json.dumps(head).encode()
    body = MAGIC + struct.pack("<Q", len(text)) + text + bytes(payload)
    with open(PATH, "wb") as fh:
        fh.write(body + hashlib.sha256(body).digest())
    try:
        obj = ps.load(PATH)
    except ps.FormatError:
        return
    try:
        if isinstance(obj, ps.IntervalSynopsis):
            lo, hi = obj.domain
            dt = np.uint64 if lo >= 0 else np.int64
            obj.count_many(np.array([lo], dtype=dt), np.array([hi], dtype=dt))
            obj.error_bound(0.9)
        elif isinstance(obj, ps.RectangleSynopsis):
            obj.count_many(np.array([[a for a, _ in obj.domain]]), np.array([[b for _, b in obj.domain]]))
            obj.error_bound(0.9)
        else:
            obj.update(1)
    except ps.SynopsisError:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
