#!/usr/bin/env python3
"""Writes src/protobuf/messages.txt, the protobuf shape of every Kubernetes
message, read from the generated sources of the `k8s-pb` crate.

Usage: k8s_pb_table.py K8S_PB_SRC_DIR > src/protobuf/messages.txt

`k8s-pb` ships prost structs, not the .proto files or a descriptor set; its
`#[prost(...)]` attributes carry each field's number, wire type and label,
and its `impl crate::Resource` blocks carry each kind's apiVersion and kind.
Field names stay in prost's snake_case: kube-sandbox resolves them to the
JSON names through the k8s-openapi schemas it already has.

Output lines:
  M <message path>                     a message (module path . struct name)
  F <number> <snake name> <type>       a field of the last message
  K <apiVersion> <kind> <message path> a kind the API serves
Types: string bool int32 int64 double bytes, `msg:<path>`, prefixed with
`[]` when repeated, or `map:<value type>` for a map with string keys.
"""
import os
import re
import sys

ROOT = sys.argv[1]
RESOURCE = re.compile(
    r'impl crate::Resource for (\w+) \{.*?API_VERSION: &\'static str = "([^"]*)";.*?KIND: &\'static str = "([^"]*)";',
    re.S,
)
CONTAINERS = {"Option", "Vec", "Box", "BTreeMap", "String"}


def resolve(module, ty):
    """The absolute path of the message a field's Rust type names."""
    ty = re.sub(r"\s+", "", ty).rstrip(",").replace(",>", ">")
    if ty.startswith("::prost::alloc::collections::BTreeMap<"):
        ty = ty[len("::prost::alloc::collections::BTreeMap<"):-1]
        ty = ty.split(",", 1)[1]
    while True:
        m = re.match(r"^(?:::[\w:]*::)?(Option|Vec|Box)<(.*)>$", ty)
        if not m:
            break
        ty = m.group(2)
    parts = ty.split("::")
    base = list(module)
    while parts and parts[0] == "super":
        base.pop()
        parts.pop(0)
    if parts and parts[0] == "crate":
        base = []
        parts.pop(0)
    return ".".join(base + parts)


def fields_of(module, lines):
    """The fields of one struct body, from its `#[prost(...)]` lines and the
    (possibly multi-line) declarations after them."""
    out = []
    attr = None
    decl = None
    for line in lines:
        line = line.strip()
        if decl is not None:
            decl += line
            if decl.count("<") == decl.count(">") and decl.endswith(","):
                out.append(field(module, attr, decl))
                attr = decl = None
            continue
        if line.startswith("#[prost("):
            attr = line[len("#[prost("):-2]
        elif attr is not None and line.startswith("pub "):
            decl = line
            if decl.count("<") == decl.count(">") and decl.endswith(","):
                out.append(field(module, attr, decl))
                attr = decl = None
    return sorted(out)


def field(module, attr, decl):
    m = re.match(r"pub (?:r#)?(\w+):(.*),$", decl)
    fname, ty = m.group(1), m.group(2)
    tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
    kind = attr.split(",")[0].strip()
    if kind.startswith("btree_map"):
        value = re.search(r'btree_map = "string, (\w+)"', attr).group(1)
        if value == "message":
            value = "msg:" + resolve(module, ty)
        return (tag, fname, "map:" + value)
    kind = kind.split("=")[0].strip()
    t = "msg:" + resolve(module, ty) if kind == "message" else kind
    if "repeated" in attr:
        t = "[]" + t
    return (tag, fname, t)


def main():
    messages = []
    kinds = []
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if f != "mod.rs":
                continue
            rel = os.path.relpath(dirpath, ROOT)
            module = [] if rel == "." else rel.split(os.sep)
            text = open(os.path.join(dirpath, f)).read()
            lines = text.split("\n")
            i = 0
            while i < len(lines):
                m = re.match(r"^pub struct (\w+) \{$", lines[i])
                if m:
                    j = i + 1
                    while lines[j] != "}":
                        j += 1
                    messages.append((".".join(module + [m.group(1)]), fields_of(module, lines[i + 1:j])))
                    i = j
                m = re.match(r"^pub struct (\w+) \{\}$", lines[i])
                if m:
                    messages.append((".".join(module + [m.group(1)]), []))
                i += 1
            for rm in RESOURCE.finditer(text):
                kinds.append((rm.group(2), rm.group(3), ".".join(module + [rm.group(1)])))
    for path, fields in sorted(messages):
        print("M", path)
        for tag, fname, t in fields:
            print("F", tag, fname, t)
    for k in sorted(kinds):
        print("K", *k)


main()
