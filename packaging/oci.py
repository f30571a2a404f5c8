#!/usr/bin/env python3
"""Writes tailship's container image as an archive `docker load` (and podman, skopeo,
containerd's `ctr import`) read: an OCI image layout, with the `manifest.json` of a
`docker save` beside it so that the image is tagged as it loads. Nothing is pulled and no
daemon is needed: the image holds one layer made here, over nothing (as `FROM scratch`).

The layer: the static binary at /usr/local/bin/tailship, the sidecar config as
/etc/tailship/tailship.toml, /etc/passwd and /etc/group naming the non-root user it runs
as (65532, `nonroot`, as distroless images have it), the positions directory
/var/lib/tailship owned by that user, and /var/log/app for the application's logs. TLS
roots are the Mozilla roots built into the binary (there is no CA bundle in the image).

Every timestamp is SOURCE_DATE_EPOCH (default 0) and entries are sorted, so the same
binary makes the same image, byte for byte.

Run: python3 packaging/oci.py BINARY CONFIG VERSION REVISION OUT.tar"""
import gzip, hashlib, io, json, os, sys, tarfile, time

UID = 65532


def layer(binary, config, mtime):
    """The layer's tar (uncompressed)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        def add(path, data=None, mode=0o644, uid=0, kind=tarfile.REGTYPE):
            info = tarfile.TarInfo(path)
            info.type, info.mode, info.uid, info.gid, info.mtime = kind, mode, uid, uid, mtime
            info.uname = info.gname = "nonroot" if uid else "root"
            if data is not None:
                info.size = len(data)
            t.addfile(info, io.BytesIO(data) if data is not None else None)

        def mkdir(path, mode=0o755, uid=0):
            add(path, mode=mode, uid=uid, kind=tarfile.DIRTYPE)

        for d in ["etc", "etc/tailship", "usr", "usr/local", "usr/local/bin", "var", "var/lib", "var/log"]:
            mkdir(d)
        add("etc/group", b"root:x:0:\nnonroot:x:65532:\n")
        add("etc/passwd", b"root:x:0:0:root:/root:/sbin/nologin\n"
                          b"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
        add("etc/tailship/tailship.toml", open(config, "rb").read())
        add("usr/local/bin/tailship", open(binary, "rb").read(), mode=0o755)
        mkdir("var/lib/tailship", uid=UID)
        mkdir("var/log/app")
    return buf.getvalue()


def blob(out, data):
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size, info.mtime, info.mode = len(data), out.mtime, 0o644
    out.tar.addfile(info, io.BytesIO(data))
    return f"sha256:{digest}", len(data)


class Out:
    def __init__(self, path, mtime):
        self.tar, self.mtime = tarfile.open(path, "w", format=tarfile.PAX_FORMAT), mtime

    def file(self, name, data):
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = len(data), self.mtime, 0o644
        self.tar.addfile(info, io.BytesIO(data))


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__.rsplit("Run: ", 1)[1])
    binary, config, version, revision, path = sys.argv[1:]
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    raw = layer(binary, config, mtime)
    gz = gzip.compress(raw, mtime=mtime)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(mtime))
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "User": f"{UID}:{UID}",
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin",
                    "TAILSHIP_CONFIG=/etc/tailship/tailship.toml",
                    "POSITIONS_DIR=/var/lib/tailship"],
            "Entrypoint": ["/usr/local/bin/tailship"],
            "Cmd": ["run"],
            "ExposedPorts": {"9080/tcp": {}},
            "Labels": {"org.opencontainers.image.title": "tailship",
                       "org.opencontainers.image.version": version,
                       "org.opencontainers.image.revision": revision,
                       "org.opencontainers.image.licenses": "Apache-2.0"},
        },
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(raw).hexdigest()}"]},
        "history": [{"created": created, "created_by": "packaging/oci.py"}],
    }
    out = Out(path, mtime)
    out.file("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
    layer_digest, layer_size = blob(out, gz)
    cfg_digest, cfg_size = blob(out, json.dumps(image_config, sort_keys=True).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg_digest, "size": cfg_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": layer_digest, "size": layer_size}],
    }
    man_digest, man_size = blob(out, json.dumps(manifest, sort_keys=True).encode())
    tag = f"tailship:{version}"
    out.file("index.json", json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": man_digest,
                       "size": man_size,
                       "annotations": {"io.containerd.image.name": f"docker.io/library/{tag}",
                                       "org.opencontainers.image.ref.name": version}}],
    }, sort_keys=True).encode())
    out.file("manifest.json", json.dumps([{
        "Config": f"blobs/sha256/{cfg_digest.split(':')[1]}",
        "RepoTags": [tag],
        "Layers": [f"blobs/sha256/{layer_digest.split(':')[1]}"],
    }]).encode())
    out.tar.close()
    print(f"{path}: {tag}, manifest {man_digest}")


if __name__ == "__main__":
    main()
