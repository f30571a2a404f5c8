#!/usr/bin/env bash
# Builds a release's artifacts into dist/ (or $DIST), from the checked-out commit:
#
#   tailship-VERSION-x86_64-linux.tar.gz   the static binary (musl: no glibc version to match),
#                                          man page, completions, example configs, systemd unit
#                                          and environment file, LICENSE, README, CHANGELOG
#   tailship_VERSION-1_amd64.deb           cargo deb: the same files, the tailship user, the unit
#   tailship-VERSION-1.x86_64.rpm          cargo generate-rpm: the same
#   tailship-VERSION-image.tar             an OCI image archive (packaging/oci.py: FROM scratch,
#                                          non-root, no daemon, nothing pulled): docker load -i
#   NOTES.md                               this version's section of CHANGELOG.md
#   SHA256SUMS                             over all of the above: sha256sum -c SHA256SUMS
#
# Needs: the x86_64-unknown-linux-musl target (rustup target add x86_64-unknown-linux-musl),
# musl-gcc for ring's C (Debian: musl-tools), cargo-deb and cargo-generate-rpm
# (cargo install --locked ...), python3.
# Run from anywhere: packaging/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
dist=${DIST:-dist}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
commit=${TAILSHIP_COMMIT:-$(git rev-parse --short=12 HEAD)}
export TAILSHIP_COMMIT=$commit
# Reproducible archives: every timestamp is the commit's.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}

# The version's notes, or no release.
notes=$(awk -v v="$version" '
    $0 ~ "^## \\[" v "\\]" { on = 1; next }
    on && /^## \[/ { exit }
    on { print }' CHANGELOG.md)
if [ -z "$(printf '%s' "$notes" | tr -d '[:space:]')" ]; then
    echo "release.sh: CHANGELOG.md has no notes under '## [$version]'" >&2
    exit 1
fi

rm -rf "$dist"
mkdir -p "$dist"
printf '# tailship %s\n%s\n' "$version" "$notes" >"$dist/NOTES.md"

cargo build --release --locked --target "$target" --bin tailship
bin=${CARGO_TARGET_DIR:-target}/$target/release/tailship
# Static: no program interpreter and no shared library needed.
if readelf -l "$bin" | grep -q 'Requesting program interpreter' || readelf -d "$bin" | grep -q '(NEEDED)'; then
    echo "release.sh: $bin is not statically linked" >&2
    exit 1
fi
"$bin" --version | grep -q "($commit)" || { echo "release.sh: $bin --version does not name $commit" >&2; exit 1; }

# The tarball.
name=tailship-$version-x86_64-linux
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
install -D -m 0755 "$bin" "$root/tailship"
install -D -m 0644 packaging/generated/tailship.1 "$root/man/tailship.1"
install -D -m 0644 packaging/generated/tailship.bash "$root/completions/tailship.bash"
install -D -m 0644 packaging/generated/_tailship "$root/completions/_tailship"
install -D -m 0644 packaging/generated/tailship.fish "$root/completions/tailship.fish"
for f in tailship local sidecar; do
    install -D -m 0644 "config/$f.toml" "$root/examples/$f.toml"
done
install -D -m 0644 systemd/tailship.service "$root/systemd/tailship.service"
install -D -m 0644 systemd/tailship.env "$root/systemd/tailship.env"
install -m 0644 LICENSE README.md CHANGELOG.md "$root/"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    -C "$stage" -cf - "$name" | gzip -9n >"$dist/$name.tar.gz"

# The packages, over the same binary (cargo deb and cargo generate-rpm read target/<target>/release).
cargo deb --no-build --target "$target" --output "$dist/"
cargo generate-rpm --target "$target" --output "$dist/"

# The image.
python3 packaging/oci.py "$bin" config/sidecar.toml "$version" "$commit" "$dist/tailship-$version-image.tar"

(cd "$dist" && sha256sum -- *.tar.gz *.deb *.rpm *-image.tar NOTES.md >SHA256SUMS)
echo "tailship $version ($commit):"
(cd "$dist" && ls -l)
