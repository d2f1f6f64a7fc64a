"""The bundle container (runtime/ingot_format.h) in Python, for tests that
take bundles apart: parse the header and section table, write them back,
recompute checksums (what a forger would do), and run the `ingot` driver with
the command-line contract checked (exit code, exactly one error line, no
signal, no hang).

CRC-32 here is zlib's, the same IEEE polynomial as ingot_crc32. Sections
stored with zstd keep a stale raw_crc32 after repair (this module does not
decompress); bundle_tool (tests/mutation) rewrites a bundle with every
section stored uncompressed so that repair covers everything.
"""
import struct
import subprocess
import zlib

HEADER = struct.Struct("<8sIIQIIII24s")   # 64 bytes
ENTRY = struct.Struct("<IIQQQII32s")      # 72 bytes
MAGIC = b"INGOTBND"
KINDS = {1: "manifest", 2: "weights", 3: "plan", 4: "code", 5: "signature"}
CODEC_NONE, CODEC_ZSTD = 0, 1
SIGNATURE = 5
assert HEADER.size == 64 and ENTRY.size == 72


class Bundle:
    """A parsed header and table over a bytearray; fields are plain attributes."""

    def __init__(self, data):
        self.data = bytearray(data)
        (self.magic, self.version, self.endian, self.file_size, self.count, self.flags,
         self.table_crc, self.header_crc, self.reserved) = HEADER.unpack_from(self.data, 0)
        self.entries = []
        # A table that does not fit (a mutant) is left unparsed.
        for i in range(self.count if 64 + self.count * ENTRY.size <= len(self.data) else 0):
            k, c, off, stored, raw, scrc, rcrc, target = ENTRY.unpack_from(self.data, 64 + i * ENTRY.size)
            self.entries.append(dict(kind=k, codec=c, offset=off, stored=stored, raw=raw,
                                     stored_crc=scrc, raw_crc=rcrc, target=target))

    @property
    def table_end(self):
        return 64 + self.count * ENTRY.size

    def section(self, kind):
        """(index, entry) of the first section of `kind` (a name or number)."""
        if isinstance(kind, str):
            kind = {v: k for k, v in KINDS.items()}[kind]
        for i, e in enumerate(self.entries):
            if e["kind"] == kind:
                return i, e
        raise KeyError(kind)

    def write_table(self):
        """Writes header fields and entries back into data (CRCs as they are)."""
        for i, e in enumerate(self.entries):
            ENTRY.pack_into(self.data, 64 + i * ENTRY.size, e["kind"], e["codec"], e["offset"], e["stored"],
                            e["raw"], e["stored_crc"], e["raw_crc"], e["target"])
        HEADER.pack_into(self.data, 0, self.magic, self.version, self.endian, self.file_size, self.count,
                         self.flags, self.table_crc, self.header_crc, self.reserved)

    def repair(self):
        """Recomputes every checksum the container holds (raw_crc only for
        uncompressed sections), then the table's and the header's."""
        n = len(self.data)
        for e in self.entries:
            if e["offset"] <= n and e["stored"] <= n - e["offset"]:
                crc = zlib.crc32(bytes(self.data[e["offset"]:e["offset"] + e["stored"]]))
                e["stored_crc"] = crc
                if e["codec"] == CODEC_NONE:
                    e["raw_crc"] = crc
        self.write_table()
        end = min(self.table_end, n)
        self.table_crc = zlib.crc32(bytes(self.data[64:end]))
        self.header_crc = 0
        self.write_table()
        self.header_crc = zlib.crc32(bytes(self.data[:64]))
        self.write_table()
        return self


def repaired(data):
    """`data` with its checksums recomputed (unchanged when it has no table)."""
    if len(data) < 64:
        return bytes(data)
    b = Bundle(data)
    if b.count > 64 or b.table_end > len(data):
        return bytes(data)
    return bytes(b.repair().data)


def run_ingot(argv, timeout=60, env=None):
    """Runs the driver; returns (returncode, stdout, stderr, problem) where
    problem is None when the command-line contract held: no signal, no
    time-out, exit 0, 1 or 2, and on exit 1 or 2 (a usage error) exactly one
    stderr line starting 'ingot: error: ' (and none on success)."""
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, b"", b"", f"hung (> {timeout} s)"
    # Lines end at '\n' only (what a terminal or a script counts).
    err_lines = [l.decode("utf-8", "replace") for l in p.stderr.split(b"\n")]
    lines = [l for l in err_lines if l.startswith("ingot: error:")]
    if p.returncode < 0:
        return p.returncode, p.stdout, p.stderr, f"killed by signal {-p.returncode}"
    if p.returncode in (1, 2):
        if len(lines) != 1:
            return p.returncode, p.stdout, p.stderr, f"exit {p.returncode} with {len(lines)} 'ingot: error:' lines"
        # The one error line must be the only line that is not a note.
        others = [l for l in err_lines if l and not l.startswith("ingot: note:") and l not in lines]
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in lines[0]):
            return p.returncode, p.stdout, p.stderr, "control characters in the error line"
        if others:
            return p.returncode, p.stdout, p.stderr, f"extra stderr output: {others[0][:120]!r}"
        return p.returncode, p.stdout, p.stderr, None
    if p.returncode == 0:
        if lines:
            return p.returncode, p.stdout, p.stderr, "exit 0 with an error line"
        return p.returncode, p.stdout, p.stderr, None
    return p.returncode, p.stdout, p.stderr, f"exit code {p.returncode}"
