"""Write hostile HDF5 traces (issue 15), each a copy of a good trace with
one thing wrong, for test-trace-hostile.sh to feed to the commands a user
would run.  Usage: trace_hostile.py GOOD.h5 OUTDIR

Each file is named after the finding it reproduces.  Huge datasets are
chunked and never written, so every file stays a few tens of KB however
many elements it declares: HDF5 returns the fill value for the chunks that
were never written, which is how a corrupt dimension behaves too."""
import ctypes
import os
import re
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


# Version 2 object headers (libver "latest": h5py's `libver='latest'`, or
# any file with attribute creation order tracked).  libhdf5 verifies their
# checksum, so a damaged byte is refused safely; a file made to do harm
# recomputes it (Jenkins' lookup3, H5_checksum_lookup3), and libhdf5 then
# decodes what the messages say (T13/T14 in tests/fuzz/README).  Format:
# HDF5 File Format Specification version 2, IV.A.1.b "Version 2 Data Object
# Header Prefix", each message 1 byte of type, 2 of size, 1 of flags and,
# with creation order tracked (prefix flag bit 2), 2 of its index;
# continuation blocks "OCHK", messages, checksum.
def lookup3(data, initval=0):
    M = 0xFFFFFFFF

    def rot(x, k):
        return ((x << k) | (x >> (32 - k))) & M

    n = len(data)
    a = b = c = (0xDEADBEEF + n + initval) & M
    i = 0
    while n > 12:
        a = (a + int.from_bytes(data[i:i + 4], "little")) & M
        b = (b + int.from_bytes(data[i + 4:i + 8], "little")) & M
        c = (c + int.from_bytes(data[i + 8:i + 12], "little")) & M
        a = (a - c) & M; a ^= rot(c, 4); c = (c + b) & M
        b = (b - a) & M; b ^= rot(a, 6); a = (a + c) & M
        c = (c - b) & M; c ^= rot(b, 8); b = (b + a) & M
        a = (a - c) & M; a ^= rot(c, 16); c = (c + b) & M
        b = (b - a) & M; b ^= rot(a, 19); a = (a + c) & M
        c = (c - b) & M; c ^= rot(b, 4); b = (b + a) & M
        n -= 12
        i += 12
    if n == 0:
        return c
    tail = bytes(data[i:i + n]) + bytes(12 - n)
    a = (a + int.from_bytes(tail[0:4], "little")) & M
    b = (b + int.from_bytes(tail[4:8], "little")) & M
    c = (c + int.from_bytes(tail[8:12], "little")) & M
    c ^= b; c = (c - rot(b, 14)) & M
    a ^= c; a = (a - rot(c, 11)) & M
    b ^= a; b = (b - rot(a, 25)) & M
    c ^= b; c = (c - rot(b, 16)) & M
    a ^= c; a = (a - rot(c, 4)) & M
    b ^= a; b = (b - rot(a, 14)) & M
    c ^= b; c = (c - rot(b, 24)) & M
    return c


def v2_chunks(data, addr):
    """[(start, end of messages, message header bytes, [(type, at, size)])]
    of the version 2 object header at addr: chunk 0, then its continuation
    blocks; the checksum of each is at its end of messages."""
    assert data[addr:addr + 4] == b"OHDR" and data[addr + 4] == 2
    flags = data[addr + 5]
    p = addr + 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
    size_len = 1 << (flags & 3)
    chunk0 = int.from_bytes(data[p:p + size_len], "little")
    hl = 6 if flags & 0x04 else 4
    # (chunk start, first message, end of messages) of the chunks still to
    # read: chunk 0, then each continuation block its messages name
    chunks, out = [(addr, p + size_len, p + size_len + chunk0)], []
    while chunks:
        start, q, end = chunks.pop(0)
        msgs = []
        while end - q >= hl:
            t, size = data[q], struct.unpack_from("<H", data, q + 1)[0]
            msgs.append((t, q + hl, size))
            if t == 0x10:
                off, length = struct.unpack_from("<QQ", data, q + hl)
                chunks.append((off, off + 4, off + length - 4))
            q += hl + size
        out.append((start, end, hl, msgs))
    return out


def v2_patch(name, path, patch):
    """A copy of the v2 trace whose object `path` has `patch(data, type, at,
    size)` applied to its messages (True when it patched one), each chunk's
    checksum recomputed."""
    src = os.path.join(outdir, "ok-v2-latest.h5")
    with h5py.File(src, "r") as f:
        addr = h5py.h5o.get_info(f[path].id).addr
    data = bytearray(open(src, "rb").read())
    done = False
    for start, end, hl, msgs in v2_chunks(data, addr):
        for t, at, size in msgs:
            done = patch(data, t, at, size) or done
        struct.pack_into("<I", data, end, lookup3(bytes(data[start:end])))
    if done:
        with open(os.path.join(outdir, name + ".h5"), "wb") as f:
            f.write(data)


with h5py.File(good, "r") as a, h5py.File(os.path.join(outdir, "ok-v2-latest.h5"), "w",
                                          libver="latest") as b:
    for k, v in a.attrs.items():
        b.attrs[k] = v

    def copy_v2(name, obj):
        # creation order tracked on the datasets: 6-byte message headers
        if isinstance(obj, h5py.Group):
            g = b.require_group(name)
            for k, v in obj.attrs.items():
                g.attrs[k] = v
            return
        kw = {"chunks": obj.chunks, "compression": obj.compression} if obj.chunks else {}
        if obj.maxshape != obj.shape:
            kw["maxshape"] = obj.maxshape
        d = b.create_dataset(name, data=obj[()], dtype=obj.dtype, track_order=True, **kw)
        for k, v in obj.attrs.items():
            d.attrs[k] = v
    a.visititems(copy_v2)
    # more attributes on /meta/software once later objects follow it: its
    # header continues in an "OCHK" block (the attributes it keeps are read)
    b.create_group("zz")
    for k in ("nccl_runtime", "cuda_runtime", "driver", "kernel"):
        b["meta/software"].attrs[k] = "x" * 48
    del b["zz"]


def zero_chunk_dim(data, t, at, size):
    if t != 0x08 or data[at] != 4 or data[at + 1] != 2:
        return False
    data[at + 5:at + 5 + data[at + 4]] = bytes(data[at + 4])
    return True


def compound_overrun(data, t, at, size):
    # a compound of 21 members claiming 40000: names past the message
    if t != 0x03 or data[at] & 0x0F != 6:
        return False
    struct.pack_into("<H", data, at + 1, 40000)
    return True


def string_ref_past_heap(data, t, at, size):
    # an attribute "kernel" (version 3: name, datatype, dataspace, then a
    # variable-length string's reference: 4 bytes of length, address, index)
    if t != 0x0C or bytes(data[at + 9:at + 16]) != b"kernel\x00":
        return False
    struct.pack_into("<I", data, at + size - 4, 0x40000000)
    return True


v2_patch("v2-chunk-dim-zero", "ops/ops", zero_chunk_dim)
v2_patch("v2-dtype-overrun", "ops/ops", compound_overrun)
v2_patch("v2-attr-ref-continued", "meta/software", string_ref_past_heap)


def rewrite(src, name, hook=None, first=None, fid=None, **file_kw):
    """A copy of trace `src` as h5py writes it with `file_kw` (libver, a
    user block), or into the file `fid` made at outdir/name.h5 with
    h5py's low-level API: first(the new file), the root's attributes,
    its groups and datasets, then hook(the new file); its path."""
    path = os.path.join(outdir, name + ".h5")
    with h5py.File(src, "r") as a, \
            (h5py.File(fid) if fid is not None else h5py.File(path, "w", **file_kw)) as b:
        if first:
            first(b)
        for k, v in a.attrs.items():
            b.attrs[k] = v
        for k in a:
            a.copy(a[k], b, name=k)
        if hook:
            hook(b)
    return path


def heap_block_size(off, start, width, max_direct):
    """The size of the direct block holding heap offset `off`: the doubling
    table's row, or, in a row of indirect blocks, that block's own table."""
    row, row_off, size = 0, 0, start
    while True:
        if row >= 2:
            size *= 2
        if off - row_off < size * width:
            if size <= max_direct:
                return size
            off -= row_off + (off - row_off) // size * size
            row, row_off, size = 0, 0, start
            continue
        row_off += size * width
        row += 1


def fix_heap_block(data, m):
    """Recompute the checksum of the fractal heap direct block holding
    byte `m`, if it is in one (not a huge object after it)."""
    blk = data.rfind(b"FHDB\0", 0, m)
    # the block's heap: its stored address, past any user block
    heap = struct.unpack_from("<Q", data, blk + 5)[0] + data.find(b"\x89HDF\r\n\x1a\n") if blk >= 0 else -1
    if blk >= 0 and data[heap:heap + 5] == b"FRHP\0" and data[heap + 9] & 2:
        width, start, max_direct, max_bits = struct.unpack_from("<HQQH", data, heap + 14 + 96)
        off_size = (max_bits + 7) // 8
        boff = int.from_bytes(data[blk + 13:blk + 13 + off_size], "little")
        size = heap_block_size(boff, start, width, max_direct)
        if m < blk + size:
            csum = blk + 13 + off_size
            struct.pack_into("<I", data, csum, 0)
            struct.pack_into("<I", data, csum, lookup3(bytes(data[blk:blk + size])))


def damage_vlen_attr(src, dst, name, skip=0, shared_type=False):
    """Make the string reference of the variable-length string attribute
    `name` (a version 3 message, or a version 1 one, its parts padded to 8
    bytes; with `shared_type`, a version 2 or 3 one whose datatype is a
    shared message; the one after the first `skip` of them) miss the
    global heap, wherever its message is: a heap's direct block (checksum
    recomputed) or a huge object."""
    data = bytearray(open(src, "rb").read())
    key = name.encode() + b"\0"
    at, ref = data.find(key), None
    unpadded, padded = (lambda n: n), (lambda n: (n + 7) // 8 * 8)
    forms = ((9, 3, unpadded), (8, 2, unpadded)) if shared_type else ((9, 3, unpadded), (8, 1, padded))
    while at >= 8 and ref is None:
        for head, ver, pad in forms:
            m = at - head
            if m < 0 or data[m] != ver:
                continue
            nsz, dtsz, dssz = struct.unpack_from("<HHH", data, m + 2)
            dt = m + head + pad(nsz)
            if nsz != len(key) or (data[m + 1] & 1 if shared_type else data[dt] & 0x0F == 9) == 0:
                continue
            if skip == 0:
                ref = dt + pad(dtsz) + pad(dssz) + 12
                break
            skip -= 1
        at = data.find(key, at + 1)
    if ref is None:
        return
    struct.pack_into("<I", data, ref, 0x40000000)
    fix_heap_block(data, ref)
    with open(dst, "wb") as f:
        f.write(data)


# Dense attribute storage (IV.A.2.f, III.G, III.A.2): the root of a v2
# trace keeps its 15 attributes in a fractal heap indexed by a B-tree of
# their names.  One copy with large attributes too, so that the heap's
# root is an indirect block of direct blocks.  Damaged: the "producer"
# string reference (SIGSEGV in H5HG_read before the walk read these).
def notes(b):
    for i in range(6):
        b.attrs["note_%d" % i] = np.bytes_(b"n" * 900)


rewrite(os.path.join(outdir, "ok-v2-latest.h5"), "ok-v2-dense-indirect", notes, libver="latest")
for src, name in (("ok-v2-latest", "v2-dense-attr-ref"),
                  ("ok-v2-dense-indirect", "v2-dense-indirect-attr-ref")):
    damage_vlen_attr(os.path.join(outdir, src + ".h5"), os.path.join(outdir, name + ".h5"),
                     "producer")


# Review of the walk above (files libhdf5 1.10.8 reads; damaged ones with
# checksums recomputed, SIGSEGV in libhdf5 before the walk read them):
# more root attributes than one B-tree leaf holds (an internal node), a
# /meta/software attribute over 4 KiB (a "huge" heap object, outside the
# heap), and a 512-byte user block (every HDF5 address then counts from
# the superblock after it).  Each damaged copy has the "producer" or
# "note" string reference of its attribute made to miss the global heap.
def v2_variant(name, userblock=0, hook=None):
    return rewrite(os.path.join(outdir, "ok-v2-latest.h5"), name, hook, libver="latest",
                   userblock_size=userblock)


def many_attrs(b):
    for i in range(40):
        b.attrs["user_%02d" % i] = "value %d" % i


def huge_attr(b):
    # dense storage first (more than 8 attributes), then one over 4 KiB
    for i in range(10):
        b["meta/software"].attrs["user_%02d" % i] = "value %d" % i
    b["meta/software"].attrs["note_" + "n" * 5000] = "a long note"


for name, ub, hook, attr in (("many-attrs", 0, many_attrs, "producer"),
                             ("huge-attr", 0, huge_attr, "note_" + "n" * 5000),
                             ("userblock", 512, None, "producer")):
    ok = v2_variant("ok-v2-" + name, ub, hook)
    damage_vlen_attr(ok, os.path.join(outdir, "v2-%s-attr-ref.h5" % name), attr)


# The dense storage's own structure, damaged where libhdf5 trusts it: a
# name index record flagged shared in a file without a shared-message
# table (libhdf5 dereferences the table it does not have), an index
# header's record count above its records (H5Aiterate2 sorts past them),
# a huge-object index address that names no index, and a root link info
# message naming a link heap that is not one (H5Lexists).
def patch_file(src, name, fn):
    data = bytearray(open(os.path.join(outdir, src + ".h5"), "rb").read())
    if fn(data):
        with open(os.path.join(outdir, name + ".h5"), "wb") as f:
            f.write(data)


def shared_record(data):
    bt = data.find(b"BTHD\0\x08")
    leaf, nrec = struct.unpack_from("<QH", data, bt + 16)
    data[leaf + 6 + 8] = 0x02
    end = leaf + 6 + 17 * nrec
    struct.pack_into("<I", data, end, lookup3(bytes(data[leaf:end])))
    return True


def index_total(data):
    bt = data.find(b"BTHD\0\x08")
    nrec = struct.unpack_from("<H", data, bt + 24)[0]
    struct.pack_into("<Q", data, bt + 26, nrec + 1)
    struct.pack_into("<I", data, bt + 34, lookup3(bytes(data[bt:bt + 34])))
    return True


def huge_index(data):
    heap = data.find(b"FRHP\0")
    struct.pack_into("<Q", data, heap + 22, 0x300)
    struct.pack_into("<I", data, heap + 142, lookup3(bytes(data[heap:heap + 142])))
    return True


patch_file("ok-v2-latest", "v2-shared-record", shared_record)
patch_file("ok-v2-latest", "v2-index-total", index_total)
patch_file("ok-v2-latest", "v2-huge-index", huge_index)


def link_heap(data, t, at, size):
    # link info: version, flags, (8 bytes with flag 0), heap, name index
    if t != 0x02 or data[at] != 0:
        return False
    p = at + 2 + (8 if data[at + 1] & 1 else 0)
    struct.pack_into("<Q", data, p, 0x300)
    return True


v2_patch("v2-link-heap", "/", link_heap)


# The same user block in a file of version 1 headers (h5py's default):
# its strings were refused as missing from the global heap (the scan kept
# file offsets, the references hold HDF5 addresses), and a damaged
# attribute reference passed the walk (SIGSEGV in H5HG_read).
rewrite(good, "ok-userblock", userblock_size=512)
data = bytearray(open(os.path.join(outdir, "ok-userblock.h5"), "rb").read())
found = attr_message(data, "producer")
if found:
    struct.pack_into("<I", data, found[1] + 12, 0x40000000)
    with open(os.path.join(outdir, "userblock-attr-ref.h5"), "wb") as f:
        f.write(data)


# A second review: a direct block whose stored heap offset is not the one
# its place in the heap gives (libhdf5 finds objects from the stored one,
# unchecked: it decoded a message the walk had not checked, SIGSEGV in
# H5HG_read), and a second attribute info message in one header (each
# walked on its own budget: quadratic time; libhdf5 reads the first).
def block_offset(data):
    heap = data.find(b"FRHP\0")
    root, rows = struct.unpack_from("<QH", data, heap + 14 + 96 + 2 + 16 + 4)
    max_bits = struct.unpack_from("<H", data, heap + 14 + 96 + 2 + 16)[0]
    if rows != 0 or data[root:root + 5] != b"FHDB\0" or not data[heap + 9] & 2:
        return False
    off_size = (max_bits + 7) // 8
    start = struct.unpack_from("<Q", data, heap + 14 + 96 + 2)[0]
    data[root + 13] = 8
    csum = root + 13 + off_size
    struct.pack_into("<I", data, csum, 0)
    struct.pack_into("<I", data, csum, lookup3(bytes(data[root:root + start])))
    return True


patch_file("ok-v2-latest", "v2-block-offset", block_offset)


def duplicate_attr_info(name):
    src = os.path.join(outdir, "ok-v2-latest.h5")
    with h5py.File(src, "r") as f:
        addr = h5py.h5o.get_info(f.id).addr
    data = bytearray(open(src, "rb").read())
    chunks = v2_chunks(data, addr)
    msgs = [(t, at, size) for _, _, _, ms in chunks for t, at, size in ms]
    info = next(((at, size) for t, at, size in msgs if t == 0x15), None)
    null = next(((at, size) for t, at, size in msgs if t == 0x00 and size >= 18), None)
    if info is None or null is None:
        return
    hl = chunks[0][2]
    data[null[0] - hl] = 0x15
    data[null[0]:null[0] + info[1]] = data[info[0]:info[0] + info[1]]
    for start, end, _, _ in chunks:
        struct.pack_into("<I", data, end, lookup3(bytes(data[start:end])))
    with open(os.path.join(outdir, name + ".h5"), "wb") as f:
        f.write(data)


duplicate_attr_info("v2-second-attr-info")


# Over 512 KiB of attributes on one object: the fractal heap's root
# indirect block then holds indirect blocks of its own (rows of blocks
# over its 64 KiB largest direct block), and the trace's attributes,
# written after the large ones, live in direct blocks under one of them.
# Damaged: the "producer" string reference (SIGSEGV in H5HG_read: the walk
# left such blocks to libhdf5), and the nested block's stored heap offset
# (libhdf5 locates a block within it from that offset, unchecked: with 0,
# a row past its entries, SIGSEGV in h5dump -A).
def fill_heap(b):
    # 3 KiB messages fill blocks of 4 KiB and more; 3,000 small ones then
    # fill what they leave, so the trace's own come after 512 KiB
    for i in range(180):
        b.attrs["big_%03d_" % i + "b" * 2900] = np.int16(i)
    for i in range(3000):
        b.attrs["f%05d" % i] = np.int8(1)


def nested_block_offset(data):
    heap = data.find(b"FRHP\0")
    width, start, max_direct, max_bits = struct.unpack_from("<HQQH", data, heap + 14 + 96)
    off_size = (max_bits + 7) // 8
    blk = data.find(b"FHIB\0")
    while blk >= 0 and not int.from_bytes(data[blk + 13:blk + 13 + off_size], "little"):
        blk = data.find(b"FHIB\0", blk + 1)
    if blk < 0:
        return False
    boff = int.from_bytes(data[blk + 13:blk + 13 + off_size], "little")
    # the rows that add up to its row's block size
    rows = (heap_block_size(boff, start, width, 2 ** 64) // (start * width)).bit_length()
    data[blk + 13:blk + 13 + off_size] = bytes(off_size)
    end = blk + 13 + off_size + rows * width * 8
    struct.pack_into("<I", data, end, lookup3(bytes(data[blk:end])))
    return True


ok = rewrite(os.path.join(outdir, "ok-v2-latest.h5"), "ok-v2-nested", first=fill_heap,
             libver="latest")
damage_vlen_attr(ok, os.path.join(outdir, "v2-nested-attr-ref.h5"), "producer")
patch_file("ok-v2-nested", "v2-nested-block-offset", nested_block_offset)


# A shared-message table (III.E) indexing attribute messages: each
# attribute then lives once in the table's fractal heap, and the headers
# (v1: the root's 15 attributes in its header) or the dense storage
# (libver "latest": its name index's records) hold its heap ID.  The walk
# skipped such attributes: a damaged "producer" reference there killed
# every command (SIGSEGV in H5HG_read).  h5py does not wrap
# H5Pset_shared_mesg_*, so they are called in the libhdf5 h5py runs on.
def hdf5_lib():
    try:
        for line in open("/proc/self/maps"):
            path = line.split()[-1]
            base = os.path.basename(path)
            if base.startswith("libhdf5") and not base.startswith("libhdf5_hl") and ".so" in base:
                return ctypes.CDLL(path)
    except OSError:
        pass
    return None


# Superblocks of every version the reader reads raw (the root group's
# header is walked before H5Fopen, which loads it: its declared size was
# allocated first), each behind a user block: version 0 (h5py's default),
# 1 (a non-default indexed-storage K, through the libhdf5 h5py runs on), 2
# (libver v18) and 3 (latest).  And the version 1 one with its root
# header's declared size damaged (libhdf5 read it first, "actual len
# exceeds EOA", and a sanitizer build aborted on the allocation).
def superblock(name, userblock, istore_k=0, libver=None):
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    if istore_k:
        lib = hdf5_lib()
        if lib is None or lib.H5Pset_istore_k(ctypes.c_int64(fcpl.id), ctypes.c_uint(istore_k)) < 0:
            return None
    fcpl.set_userblock(userblock)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    if libver:
        fapl.set_libver_bounds(libver, h5py.h5f.LIBVER_LATEST)
    path = os.path.join(outdir, name + ".h5")
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    rewrite(good, name, fid=fid)
    fid.close()
    return path


superblock("ok-superblock-0", 4096)
superblock("ok-superblock-2", 1024, libver=h5py.h5f.LIBVER_V18)
superblock("ok-superblock-3", 2048, libver=h5py.h5f.LIBVER_LATEST)
sb1 = superblock("ok-superblock-1", 2048, istore_k=64)
if sb1:
    data = bytearray(open(sb1, "rb").read())
    at = data.find(b"\x89HDF\r\n\x1a\n")
    o = data[at + 13]
    root = at + int.from_bytes(data[at + 28 + 5 * o:at + 28 + 6 * o], "little")
    if data[at + 8] == 1 and data[root] == 1:
        struct.pack_into("<I", data, root + 8, 0x7FFFFFF0)  # the header's size
        with open(os.path.join(outdir, "superblock-1-root-size.h5"), "wb") as f:
            f.write(data)


def sohm_copy(src, name, libver, types=0x1000):
    lib = hdf5_lib()
    if lib is None:
        return None
    path = os.path.join(outdir, name + ".h5")  # the fid's: rewrite() names it so too
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    # one index, of messages of any size of `types` (1 << each type: the
    # attribute's 0x000C, the datatype's 0x0003, the dataspace's 0x0001)
    if (lib.H5Pset_shared_mesg_nindexes(ctypes.c_int64(fcpl.id), 1) < 0
            or lib.H5Pset_shared_mesg_index(ctypes.c_int64(fcpl.id), 0, types, 1) < 0):
        return None
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(libver, h5py.h5f.LIBVER_LATEST)
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    return rewrite(src, name, fid=fid)


for name, libver in (("sohm-v1", h5py.h5f.LIBVER_EARLIEST), ("sohm-v2", h5py.h5f.LIBVER_LATEST)):
    ok = sohm_copy(good, "ok-" + name, libver)
    if ok:
        damage_vlen_attr(ok, os.path.join(outdir, name + "-attr-ref.h5"), "producer")


# The table's heap damaged where libhdf5 trusts it (a huge-object index
# with no huge object: SIGSEGV at close once anything opened the heap);
# datatypes and dataspaces shared too (index of types 0x100a): the
# attributes' datatypes, the tables' compound types and every dataspace
# then live in the heap.  Damaged: the "producer" reference behind a
# shared datatype (the walk took a shared datatype for a committed one
# and checked nothing: SIGSEGV in H5HG_read), and the ops table's
# compound type claiming 40000 members (T14 through the table; libhdf5
# 1.10.8 decodes members past the message and here stops at garbage, "bad
# version number for datatype message", where T14 in a header crashed).
def sohm_heap(data):
    """The HDF5 address of the table's (first index's) heap, or None."""
    t = data.find(b"SMTB")
    return struct.unpack_from("<Q", data, t + 4 + 14 + 8)[0] if t >= 0 else None


def sohm_blocks(data):
    """File offsets of that heap's direct blocks."""
    heap = sohm_heap(data)
    blk = data.find(b"FHDB\0")
    while blk >= 0:
        if struct.unpack_from("<Q", data, blk + 5)[0] == heap:
            yield blk
        blk = data.find(b"FHDB\0", blk + 1)


def sohm_heap_huge_index(data):
    heap = sohm_heap(data)
    if heap is None:
        return False
    heap += data.find(b"\x89HDF\r\n\x1a\n")  # past any user block
    if data[heap:heap + 4] != b"FRHP":
        return False
    data[heap + 22:heap + 30] = bytes(8)
    struct.pack_into("<I", data, heap + 142, lookup3(bytes(data[heap:heap + 142])))
    return True


def sohm_compound_overrun(data):
    with h5py.File(os.path.join(outdir, "ok-sohm-types.h5"), "r") as f:
        members, size = len(f["ops/ops"].dtype.names), f["ops/ops"].dtype.itemsize
    for blk in sohm_blocks(data):
        for i in range(blk, min(len(data) - 8, blk + 65536)):
            if (data[i] & 0x0F == 6 and data[i] >> 4 in (1, 2, 3)
                    and struct.unpack_from("<HBI", data, i + 1) == (members, 0, size)):
                struct.pack_into("<H", data, i + 1, 40000)
                fix_heap_block(data, i)
                return True
    return False


patch_file("ok-sohm-v1", "sohm-heap-huge-index", sohm_heap_huge_index)
ok = sohm_copy(good, "ok-sohm-types", h5py.h5f.LIBVER_LATEST, types=0x100a)
if ok:
    damage_vlen_attr(ok, os.path.join(outdir, "sohm-types-attr-ref.h5"), "producer",
                     shared_type=True)
    patch_file("ok-sohm-types", "sohm-types-compound", sohm_compound_overrun)


# Version 1 groups (a symbol table message naming a B-tree of symbol nodes
# and a local heap of link names), which libhdf5 1.10.8 reads on every
# name lookup and trusts (the second review of the walk, v1 groups): the
# root's heap data at the undefined address or of 2^64 - 1 bytes (SIGSEGV;
# heap corruption), its free list looping (memory without bound), its
# B-tree node made level 1 with itself as child (recursion until the stack
# runs out) or a child at the undefined address (SIGSEGV).  The root's
# B-tree and heap are found through the superblock's (version 0) root
# entry, whose scratch pad caches them.
def root_stab(data):
    if data[8] != 0 or struct.unpack_from("<I", data, 72)[0] != 1:
        return None
    return struct.unpack_from("<QQ", data, 80)


def v1_patch(name, fn):
    data = bytearray(open(good, "rb").read())
    stab = root_stab(data)
    if stab and data[stab[0]:stab[0] + 4] == b"TREE" and data[stab[1]:stab[1] + 4] == b"HEAP":
        fn(data, *stab)
        with open(os.path.join(outdir, name + ".h5"), "wb") as f:
            f.write(data)


def heap_freelist_loop(data, tree, heap):
    size, _, seg = struct.unpack_from("<QQQ", data, heap + 8)
    at = size - 16
    struct.pack_into("<Q", data, heap + 16, at)
    struct.pack_into("<QQ", data, seg + at, at, 16)


v1_patch("v1-heap-data-undef", lambda d, tree, heap: struct.pack_into("<Q", d, heap + 24, 2**64 - 1))
v1_patch("v1-heap-size-huge", lambda d, tree, heap: struct.pack_into("<Q", d, heap + 8, 2**64 - 1))
v1_patch("v1-heap-freelist-loop", heap_freelist_loop)
v1_patch("v1-tree-self-child", lambda d, tree, heap: (d.__setitem__(tree + 5, 1),
                                                      struct.pack_into("<Q", d, tree + 32, tree)))
v1_patch("v1-tree-child-undef", lambda d, tree, heap: struct.pack_into("<Q", d, tree + 32, 2**64 - 1))


# Links other than hard ones: libhdf5 follows an external link into
# another file, which none of the checks read (a damaged copy there
# crashed every command; a FIFO there blocked open forever; an empty
# link crashed H5Lget_info), and a soft link wherever it points.
with copy("link-external") as f:
    del f["meta/env"]
    f["meta/env"] = h5py.ExternalLink(os.path.basename(good), "/meta/env")
with copy("link-soft") as f:
    f.move("meta/env", "meta/env_real")
    f["meta/env"] = h5py.SoftLink("/meta/env_real")


# A dataset's dataspace shared through the table (index of types 0x100a):
# its rank raised to 32, so the sizes libhdf5 decodes run past the heap
# object holding it (libhdf5 1.10.8 refuses this one itself, "rank might
# cause reading passed buffer's end"; the walk no longer relies on it).
def sohm_space_rank(data):
    # a 1-D dataspace as libhdf5 shares it: version 1, rank 1, flags (bit
    # 0: maximum sizes follow), 5 reserved bytes
    space = re.compile(rb"\x01\x01[\x00\x01]\x00{5}")
    for blk in sohm_blocks(data):
        m = space.search(data, blk + 22, blk + 4096)
        if m:
            data[m.start() + 1] = 32
            fix_heap_block(data, m.start())
            return True
    return False


if ok:
    patch_file("ok-sohm-types", "sohm-types-space-rank", sohm_space_rank)
