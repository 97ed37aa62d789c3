"""Write hostile HDF5 traces (issue 15), each a copy of a good trace with
one thing wrong, for test-trace-hostile.sh to feed to the commands a user
would run.  Usage: trace_hostile.py GOOD.h5 OUTDIR

Each file is named after the finding it reproduces.  Huge datasets are
chunked and never written, so every file stays a few tens of KB however
many elements it declares: HDF5 returns the fill value for the chunks that
were never written, which is how a corrupt dimension behaves too."""
import os
import shutil
import struct
import sys

import h5py
import numpy as np

good, outdir = sys.argv[1], sys.argv[2]


def copy(name):
    path = os.path.join(outdir, name + ".h5")
    shutil.copy(good, path)
    return h5py.File(path, "r+")


def replace_dataset(f, path, **kw):
    del f[path]
    f.create_dataset(path, **kw)


# 2: a root string attribute that is an array of 64 variable-length strings
# (read into one char *: a stack overflow), the same as fixed-length
# strings (a heap overflow of the one-string buffer), and an integer
# attribute that is an array (a stack overflow of one guint32).
with copy("f2-producer-vlen-array") as f:
    del f.attrs["producer"]
    f.attrs.create("producer", ["shardplan sim %d" % i for i in range(64)],
                   dtype=h5py.string_dtype("utf-8"))
with copy("f2-producer-fixed-array") as f:
    del f.attrs["producer"]
    f.attrs.create("producer", np.array([b"x" * 200] * 64, dtype="S200"))
with copy("f2-world-size-array") as f:
    del f.attrs["world_size"]
    f.attrs.create("world_size", np.arange(4096, dtype="<u4"))
with copy("f2-check-policy-empty") as f:
    # A null dataspace: no element at all.
    del f.attrs["check_policy"]
    f.attrs.create("check_policy", h5py.Empty(h5py.string_dtype("utf-8")))

# 3: 2^32 + 1 elements, which a (guint) cast made 1.
with copy("f3-members-2p32") as f:
    replace_dataset(f, "groups/members", shape=(2**32 + 1,), dtype="<u4",
                    chunks=(4096,))
with copy("f3-env-2p32") as f:
    dt = f["meta/env"].dtype
    replace_dataset(f, "meta/env", shape=(2**32 + 1,), dtype=dt, chunks=(256,))

# 4: declared sizes the file cannot hold: 1.4e9 rows of /ops/ops (trace show
# read fill values for hours; compare allocated 32 GiB) and 512 Mi members
# (2 GiB allocated for a 30 KB file), 100 Mi members (400 MB).
with copy("f4-ops-rows") as f:
    f["ops/ops"].resize((1_400_000_000,))
with copy("f4-members-512M") as f:  # beyond the schema's limit
    replace_dataset(f, "groups/members", shape=(512 * 2**20,), dtype="<u4",
                    chunks=(65536,))

with copy("f4-members-100M") as f:  # within it, but not within the file
    replace_dataset(f, "groups/members", shape=(100 * 2**20,), dtype="<u4",
                    chunks=(65536,))

# 7: structure the schema does not have, refused before any data is read.
with copy("f7-groups-type") as f:
    # group_id as a big-endian 16-bit integer: the same class, not the type.
    old = f["groups/groups"][:]
    dt = np.dtype([(n, ">u2" if n == "group_id" else old.dtype.fields[n][0])
                   for n in old.dtype.names])
    new = np.zeros(len(old), dtype=dt)
    for n in old.dtype.names:
        new[n] = old[n]
    replace_dataset(f, "groups/groups", data=new)
with copy("f7-ops-vlen-field") as f:
    # A field the schema does not name, holding variable-length data.
    old = f["ops/ops"][:]
    dt = np.dtype([(n, old.dtype.fields[n][0]) for n in old.dtype.names]
                  + [("note", h5py.string_dtype("utf-8"))])
    new = np.zeros(len(old), dtype=dt)
    for n in old.dtype.names:
        new[n] = old[n]
    new["note"] = "x"
    replace_dataset(f, "ops/ops", data=new, maxshape=(None,), chunks=True)
with copy("f7-members-2d") as f:
    replace_dataset(f, "groups/members", data=np.zeros((4, 4), dtype="<u4"))
with copy("f7-plan-array") as f:
    replace_dataset(f, "meta/plan", data=["{}"] * 8, dtype=h5py.string_dtype("utf-8"))
with copy("f7-members-filter") as f:
    # A filter a trace never uses (scale-offset, built into libhdf5).
    replace_dataset(f, "groups/members", data=np.arange(64, dtype="<u4"),
                    chunks=(16,), scaleoffset=0)


# 7: a damaged global heap collection, where libhdf5 1.10.8 keeps the
# variable-length strings and trusts what it finds: an object size past the
# end of its collection (H5HG_read copies gigabytes: SIGSEGV) and a free
# space object of size 0 (the collection loader loops forever).  The
# layout: HDF5 File Format Specification, III.E "Global Heap".
def heap_objects(data):
    """(offset of the size field, index, size) of the first collection's objects."""
    at = data.index(b"GCOL\x01\x00\x00\x00")
    size = struct.unpack_from("<Q", data, at + 8)[0]
    p, end, out = at + 16, at + size, []
    while end - p >= 16:
        idx = struct.unpack_from("<H", data, p)[0]
        osize = struct.unpack_from("<Q", data, p + 8)[0]
        out.append((p + 8, idx, osize))
        p += osize if idx == 0 else 16 + (osize + 7) // 8 * 8
    return out


def patch_heap(name, pick, value):
    data = bytearray(open(good, "rb").read())
    at = next(a for a, idx, size in heap_objects(data) if pick(idx))
    struct.pack_into("<Q", data, at, value)
    with open(os.path.join(outdir, name + ".h5"), "wb") as f:
        f.write(data)


patch_heap("f7-heap-object-size", lambda idx: idx > 0, 0xC6000008)
patch_heap("f7-heap-free-size-0", lambda idx: idx == 0, 0)

# 7: a damaged reference to a string in a table: libhdf5 1.10.8 indexes
# the collection's object table with it unchecked (SIGSEGV in H5HG_read).
# The reference is 4 bytes of length, an 8-byte address, a 4-byte index;
# hostname is the second field of /meta/cluster/nodes, after a uint32.
with h5py.File(good, "r") as f:
    nodes_at = f["meta/cluster/nodes"].id.get_offset()
data = bytearray(open(good, "rb").read())
struct.pack_into("<I", data, nodes_at + 4 + 12, 0x40000000)
with open(os.path.join(outdir, "f7-string-ref.h5"), "wb") as f:
    f.write(data)

# Not hostile to the reader but to what sums the rows: every time and size
# at its extreme (trace show once summed durations into a signed overflow).
with copy("ok-extreme-values") as f:
    rows = f["ops/ops"][:]
    rows["dur_ns"] = 2**63 - 1
    rows["t_start_ns"] = -2**63
    rows["t_end_ns"] = 2**63 - 1
    rows["bytes"] = 2**64 - 1
    rows["count"] = 2**64 - 1
    f["ops/ops"][:] = rows

# Valid files whose values JSON cannot carry as they are: rates that are
# NaN or infinite (null in JSON), a hostname that is not UTF-8 (U+FFFD),
# and a world_size of 2^32 - 1 with no ranks table (a Chrome track per rank
# that has a row, not per rank the header claims).
with copy("ok-nonfinite-rates") as f:
    rows = f["ops/ops"][:]
    rows["algbw_gbs"][0::2] = np.nan
    rows["busbw_gbs"][0::2] = np.inf
    rows["busbw_gbs"][1::2] = -np.inf
    f["ops/ops"][:] = rows
with copy("ok-hostname-not-utf8") as f:
    nodes = f["meta/cluster/nodes"][:]
    nodes["hostname"][0] = b"node-\xff\xfe"
    f["meta/cluster/nodes"][:] = nodes
with copy("ok-world-huge") as f:
    f.attrs.modify("world_size", np.uint32(2**32 - 1))
    ranks = f["meta/cluster/ranks"]
    replace_dataset(f, "meta/cluster/ranks", shape=(0,), dtype=ranks.dtype)

# 7: the filter pipeline message of /ops/ops made an unknown message type
# (one byte, found by the byte-flip loop): libhdf5 ignores it, takes the
# deflated chunk for a raw one and copies a whole chunk's worth out of it
# (a heap over-read in H5VM_memcpyvv).  The message header (libhdf5 1.10's
# version 1 object headers): type (2 bytes), size (2), flags (1), 3 reserved,
# then the pipeline, whose first filter is shuffle.  Only written where the
# sample has that layout.
data = bytearray(open(good, "rb").read())
at = data.find(b"shuffle\x00")
hdr = data.rfind(b"\x0b\x00", max(at - 64, 0), at) if at >= 0 else -1
if hdr >= 0:
    data[hdr + 1] = 2
    with open(os.path.join(outdir, "f7-filters-dropped.h5"), "wb") as f:
        f.write(data)

# 7: a root string attribute's reference and its type, damaged in the
# object header (libhdf5 follows the reference unchecked: SIGSEGV in
# H5HG_read; and allocates length x the characters' size, where a damaged
# size makes gigabytes).  An attribute message (version 1) holds the name
# padded to 8 bytes, the datatype (20 bytes for a variable-length string:
# 8 of header, then the characters' type, whose size is at bytes 12..15),
# the dataspace and the reference (4 bytes of length, 8 of address, 4 of
# index).  Found by its name; only written where the layout is that one.
def attr_message(data, name):
    key = name.encode() + b"\x00"
    at = data.find(key)
    while at >= 8:
        hdr = at - 8
        ver, _, nsz, dtsz, dssz = struct.unpack_from("<BBHHH", data, hdr)
        if ver == 1 and nsz == len(key) and dtsz == 20:
            dt = hdr + 8 + (nsz + 7) // 8 * 8
            return dt, dt + 24 + (dssz + 7) // 8 * 8
        at = data.find(key, at + 1)
    return None


for name, patch in (("f7-attr-ref", lambda d, dt, ref: struct.pack_into("<I", d, ref + 12,
                                                                        0x40000000)),
                    ("f7-attr-type", lambda d, dt, ref: struct.pack_into("<I", d, dt + 12,
                                                                         0x96000001))):
    data = bytearray(open(good, "rb").read())
    found = attr_message(data, "producer")
    if found:
        patch(data, *found)
        with open(os.path.join(outdir, name + ".h5"), "wb") as f:
            f.write(data)

# 7: the same attribute message with a dataspace size running past it (one
# byte, found by the byte-flip loop): libhdf5 copies that many bytes while
# decoding it in H5Aexists (SEGV in H5O__msg_iterate_real under ASan, a
# silent over-read without).  Byte 7 of the message is that size's high byte.
data = bytearray(open(good, "rb").read())
found = attr_message(data, "producer")
if found:
    key = data.find(b"producer\x00", 0)
    while key >= 8 and struct.unpack_from("<BBH", data, key - 8)[::2] != (1, 9):
        key = data.find(b"producer\x00", key + 1)
    if key >= 8:
        data[key - 8 + 7] = 0xFC
        with open(os.path.join(outdir, "f7-attr-message.h5"), "wb") as f:
            f.write(data)
