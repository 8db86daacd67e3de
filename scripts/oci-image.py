#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""An image archive, FROM scratch, with no daemon and no builder.

  oci-image.py OUT.tar SPEC.json

SPEC: {"name": "qemu-jitbpf/binfmt", "tags": ["0.9.0", "latest"],
       "files": [["/usr/bin/binfmt", "build/oci/binfmt", "0755"], ...],
       "dirs": [["/tmp", "1777"], ...],
       "config": {"Entrypoint": [...], "Env": [...], "Volumes": {...}, ...},
       "labels": {...}}

One layer: the files (a source that is a link is followed), the
directories, and the parents of each, owned by root, dated 0 (the archive is
the same for the same inputs).  The archive is both an OCI image layout
(oci-layout, index.json, blobs/sha256/...), which podman load and Docker 25
and later read, and Docker's own format (manifest.json naming the same
blobs), which every docker load reads, 20.10 included.
"""
import hashlib
import io
import json
import os
import sys
import tarfile


def tar_bytes(members):
    """A tar of MEMBERS [(TarInfo, bytes or None)], in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def entry(path, kind, mode, data=None):
    info = tarfile.TarInfo(path.lstrip("/"))
    info.type = kind
    info.mode = mode
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    if data is not None:
        info.size = len(data)
    return info, data


def layer(spec):
    dirs = {}
    for d, mode in spec.get("dirs", []):
        dirs[d.rstrip("/")] = int(mode, 8)
    files = []
    for dest, src, mode in spec["files"]:
        with open(src, "rb") as f:
            files.append((dest, f.read(), int(mode, 8)))
        parent = os.path.dirname(dest)
        while parent not in ("", "/"):
            dirs.setdefault(parent, 0o755)
            parent = os.path.dirname(parent)
    members = [entry(d, tarfile.DIRTYPE, m) for d, m in sorted(dirs.items())]
    members += [entry(p, tarfile.REGTYPE, m, data) for p, data, m in sorted(files)]
    return tar_bytes(members)


def blob(blobs, data, media):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media, "digest": digest, "size": len(data)}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: oci-image.py OUT.tar SPEC.json")
    out, spec_path = sys.argv[1:]
    with open(spec_path) as f:
        spec = json.load(f)
    blobs = {}
    rootfs = layer(spec)
    layer_desc = blob(blobs, rootfs, "application/vnd.oci.image.layer.v1.tar")
    config = dict(spec.get("config", {}))
    if spec.get("labels"):
        config["Labels"] = spec["labels"]
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "scripts/oci-image.py"}],
    }
    config_desc = blob(blobs, json.dumps(image_config, sort_keys=True).encode(),
                       "application/vnd.oci.image.config.v1+json")
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config_desc,
        "layers": [layer_desc],
    }
    manifest_desc = blob(blobs, json.dumps(manifest, sort_keys=True).encode(),
                         "application/vnd.oci.image.manifest.v1+json")
    refs = ["%s:%s" % (spec["name"], t) for t in spec["tags"]]
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [dict(manifest_desc,
                           annotations={"io.containerd.image.name": "docker.io/" + r,
                                        "org.opencontainers.image.ref.name": r.split(":")[-1]})
                      for r in refs],
    }
    path_of = lambda d: "blobs/sha256/" + d.split(":")[1]
    docker_manifest = [{"Config": path_of(config_desc["digest"]), "RepoTags": refs,
                        "Layers": [path_of(layer_desc["digest"])]}]
    members = [entry("blobs", tarfile.DIRTYPE, 0o755),
               entry("blobs/sha256", tarfile.DIRTYPE, 0o755)]
    members += [entry(path_of(d), tarfile.REGTYPE, 0o644, data)
                for d, data in sorted(blobs.items())]
    members += [
        entry("oci-layout", tarfile.REGTYPE, 0o644, b'{"imageLayoutVersion":"1.0.0"}'),
        entry("index.json", tarfile.REGTYPE, 0o644, json.dumps(index, sort_keys=True).encode()),
        entry("manifest.json", tarfile.REGTYPE, 0o644,
              json.dumps(docker_manifest, sort_keys=True).encode()),
    ]
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(tar_bytes(members))
    os.replace(tmp, out)
    print("%s: %s, %d bytes, layer %s" % (out, ", ".join(refs), os.path.getsize(out),
                                           layer_desc["digest"][:19]))


if __name__ == "__main__":
    main()
