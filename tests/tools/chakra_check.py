#!/usr/bin/env python3
"""An independent reader of `shardplan chakra export`'s files: Python's
protobuf package, with the message classes compiled by protoc --python_out
from the project's tools/chakra/et_def.proto (never shardplan's C code),
checks every rank's file against the plan JSON and against the groups
`shardplan groups --format json` prints for the plan's options:

  - each file is a whole stream of length-delimited messages: one
    GlobalMetadata, then nodes, nothing left over;
  - the node count of rank r = the plan's ops that r runs (kernels: all
    ranks; collectives and composites: the ranks in a group of the family);
  - collectives: COMM_COLL_NODE, comm_type = the kind's Chakra code,
    comm_size = the plan's bytes, is_cpu_op false, pg_name a key of
    PREFIX.groups.json whose ranks are exactly the DeepSpeed group of the op's
    family that holds r, pg_desc naming that family;
  - send / recv: a COMM_SEND_NODE (id = the op's) then a COMM_RECV_NODE (id =
    ops + the op's id, sp_p2p_of = the op's id), comm_size = the plan's
    bytes, comm_tag = the op's id, comm_src / comm_dst the ring of the op's
    group (group rank g sends to g + 1 and receives from g - 1; recv: the
    reverse);
  - p2p: on its group's src member a COMM_SEND_NODE, on its dst member a
    COMM_RECV_NODE, both with the op's id, comm_src / comm_dst = those two
    ranks, sp_src / sp_dst = their group ranks; no node on the other members;
  - kernels: COMP_NODE, num_ops = the plan's FLOPs;
  - data deps = the plan's deps, a dep that r does not run replaced by its
    own deps (a send / recv dep is both of its nodes), every dep a node of
    the same file; where r skips a dep, sp_deps = the plan's deps.

usage: chakra_check.py ET_PY_DIR PLAN.json PREFIX GROUPS.json
(ET_PY_DIR holds et_def_pb2.py; GROUPS.json is `shardplan groups` output)
"""
import json
import sys

sys.path.insert(0, sys.argv[1])
import et_def_pb2 as et  # noqa: E402

KIND_CODE = {"all_reduce": 0, "reduce": 1, "all_gather": 2, "gather": 3, "scatter": 4,
             "broadcast": 5, "all_to_all": 6, "reduce_scatter": 7,
             "reduce_scatter_block": 8, "barrier": 9}
KERNELS = {"compute", "quantize", "dequantize", "quant_reduce"}
P2P = {"send", "recv"}


def runs(op, r, group_of):
    """Whether rank r runs op (a p2p op: its group's src and dst only)."""
    if op["kind"] in KERNELS or op["family"] == "none":
        return True
    members = group_of.get((op["family"], r))
    if members is None:
        return False
    if op["kind"] == "p2p":
        return r in (members[op["src"]], members[op["dst"]])
    return True


def varint(buf, pos):
    v = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, pos


def messages(path):
    buf = open(path, "rb").read()
    pos = 0
    out = []
    while pos < len(buf):
        n, pos = varint(buf, pos)
        if pos + n > len(buf):
            raise ValueError(f"{path}: message of {n} bytes at {pos} runs past the end")
        out.append(buf[pos:pos + n])
        pos += n
    return out


def attrs(node):
    d = {}
    for a in node.attr:
        d[a.name] = getattr(a, a.WhichOneof("value")) if a.WhichOneof("value") else None
    return d


def main():
    _, _, plan_path, prefix, groups_path = sys.argv
    plan = json.load(open(plan_path))
    world = plan["world_size"]
    fams = json.load(open(groups_path))["families"]
    fams["world"] = [list(range(world))]
    if "local_all_to_all" in fams:
        # `shardplan groups` lists local_i then global_i (DeepSpeed's order)
        n_local = world // plan["groups"]["devices_per_node"]
        both = fams.pop("local_all_to_all")
        fams["local_all_to_all.local"] = both[:n_local]
        fams["local_all_to_all.global"] = both[n_local:]
    pg = json.load(open(prefix + ".groups.json"))
    for k in pg:
        assert k.isdigit() and int(k) > 0, f"group key {k!r} is not a decimal > 0"
    ops = plan["ops"]
    group_of = {}  # (family, rank) -> members
    for fam, groups in fams.items():
        for g in groups:
            for r in g:
                group_of[(fam, r)] = g
    n_nodes = n_coll = 0
    for r in range(world):
        path = f"{prefix}.{r}.et"
        msgs = messages(path)
        gm = et.GlobalMetadata()
        gm.ParseFromString(msgs[0])
        assert gm.version, f"{path}: no version"
        gattr = {a.name: a for a in gm.attr}
        assert gattr["rank"].uint64_val == r, f"{path}: rank attribute"
        expect = [op for op in ops if runs(op, r, group_of)]
        ran = {op["id"] for op in expect}
        eff = {}  # op id -> its deps on r, over the ops r runs
        for op in ops:
            eff[op["id"]] = sorted({x for d in op["deps"]
                                    for x in ([d] if d in ran else eff[d])})
        nodes = []
        for m in msgs[1:]:
            n = et.Node()
            n.ParseFromString(m)
            nodes.append(n)
        n_ops = len(ops)
        halves = [(op, h) for op in expect for h in ((0, 1) if op["kind"] in P2P else (0,))]
        assert len(nodes) == len(halves), \
            f"{path}: {len(nodes)} nodes, the plan has {len(halves)} nodes on rank {r}"
        ids = set()
        for n, (op, half) in zip(nodes, halves):
            where = f"{path}: node {n.id}"
            assert n.id == op["id"] + half * n_ops, f"{where}: expected op {op['id']} half {half}"
            assert n.name == op["name"], f"{where}: name"
            a = attrs(n)
            if op["kind"] == "p2p":
                members = group_of[(op["family"], r)]
                frm, to = members[op["src"]], members[op["dst"]]
                want = (et.COMM_SEND_NODE if r == frm else et.COMM_RECV_NODE, frm, to)
                got = (n.type, a["comm_src"], a["comm_dst"])
                assert got == want, f"{where}: (type, comm_src, comm_dst) {got}, expected {want}"
                assert (a["sp_src"], a["sp_dst"]) == (op["src"], op["dst"]), f"{where}: sp_src / sp_dst"
                assert a["comm_size"] == op["bytes"], f"{where}: comm_size"
                assert a["comm_tag"] == op["id"], f"{where}: comm_tag"
                n_coll += 1
            elif op["kind"] in P2P:
                members = group_of[(op["family"], r)]
                g = members.index(r)
                nxt, prv = members[(g + 1) % len(members)], members[(g - 1) % len(members)]
                to, frm = (nxt, prv) if op["kind"] == "send" else (prv, nxt)
                want = (et.COMM_SEND_NODE, r, to) if half == 0 else (et.COMM_RECV_NODE, frm, r)
                got = (n.type, a["comm_src"], a["comm_dst"])
                assert got == want, f"{where}: (type, comm_src, comm_dst) {got}, expected {want}"
                assert a["comm_size"] == op["bytes"], f"{where}: comm_size"
                assert a["comm_tag"] == op["id"], f"{where}: comm_tag"
                assert half == 0 or a["sp_p2p_of"] == op["id"], f"{where}: sp_p2p_of"
                n_coll += 1
            elif op["kind"] in KIND_CODE:
                n_coll += 1
                assert n.type == et.COMM_COLL_NODE, f"{where}: type {n.type}"
                assert a["comm_type"] == KIND_CODE[op["kind"]], f"{where}: comm_type"
                assert a["comm_size"] == op["bytes"], \
                    f"{where}: comm_size {a['comm_size']} != plan bytes {op['bytes']}"
                assert a["is_cpu_op"] is False, f"{where}: is_cpu_op"
                members = pg[a["pg_name"]]
                want = group_of[(op["family"], r)]
                assert sorted(members) == sorted(want), \
                    f"{where}: pg_name {a['pg_name']} has {members}, the {op['family']} group " \
                    f"of rank {r} is {want}"
                assert a["pg_desc"].rsplit(".", 1)[0] == op["family"], f"{where}: pg_desc"
            else:
                assert n.type == et.COMP_NODE, f"{where}: type {n.type}"
                if op["kind"] in KERNELS:
                    assert a["num_ops"] == op["flops"], f"{where}: num_ops"
            want_deps = [d + h * n_ops for d in eff[op["id"]]
                         for h in ((0, 1) if ops[d]["kind"] in P2P else (0,))]
            # where r skips a dep the plan's deps ride along (all files alike)
            if any(d not in ran for d in op["deps"]) or "sp_deps" in a:
                assert list(a["sp_deps"].values) == op["deps"], f"{where}: sp_deps"
            assert sorted(n.data_deps) == sorted(want_deps), \
                f"{where}: data_deps {list(n.data_deps)} != plan deps {op['deps']}"
            for d in list(n.data_deps) + list(n.ctrl_deps):
                assert d in ids, f"{where}: dep {d} is not an earlier node of the file"
            ids.add(n.id)
        n_nodes += len(nodes)
    print(f"{world} files, {n_nodes} nodes ({n_coll} communication), "
          f"{len(pg)} groups: match the plan")


if __name__ == "__main__":
    main()
