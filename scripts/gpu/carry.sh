# carry.sh: shell functions, sourced by scripts/gpu/pack-train.sh, pack-bench.sh (here) and
# check-train.sh, check-bench.sh (on the lent machine), that pack a staged folder into one archive with
# checksums and unpack it there, verified: the lent machine has no Go and no network, so what runs there
# travels as an archive in a folder the call carries.

# copy_openblas BIN DIR copies the OpenBLAS that BIN links (Debian's libopenblas.so.0) and the Fortran
# libraries it needs into DIR, for a machine that has none.
copy_openblas() {
	local bin=$1 dir=$2 lib path
	mkdir -p "$dir"
	for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
		path=$(ldd "$bin" | awk -v l="$lib" '$1 == l { print $3 }')
		[ -n "$path" ] || path=$(ldd /lib/x86_64-linux-gnu/libopenblas.so.0 | awk -v l="$lib" '$1 == l { print $3 }')
		[ -f "$path" ] || { printf 'cannot find %s\n' "$lib" >&2; return 1; }
		cp -L "$path" "$dir/$lib"
	done
}

# pack_stage STAGE CARRY ARCHIVE writes the commit and the sha256 of every file into STAGE, then packs
# STAGE into CARRY/ARCHIVE (a gzip-compressed tar; CARRY is emptied first) with CARRY/SHA256SUMS.
pack_stage() {
	local stage=$1 carry=$2 archive=$3
	git rev-parse HEAD >"$stage/commit" 2>/dev/null || echo unknown >"$stage/commit"
	(cd "$stage" && find . -type f ! -name SHA256SUMS -print0 | sort -z | xargs -0 sha256sum >SHA256SUMS)
	rm -rf "$carry"
	mkdir -p "$carry"
	tar -C "$stage" -czf "$carry/$archive" .
	(cd "$carry" && sha256sum "$archive" >SHA256SUMS)
}

# unpack_carry CARRY ARCHIVE STATE PACKER checks CARRY/ARCHIVE against its sha256, unpacks it into STATE
# (emptied first) and checks every file; on a mismatch it says which and returns 2. PACKER names the
# script that makes the archive, for the message when it is missing.
unpack_carry() {
	local carry=$1 archive=$2 state=$3 packer=$4
	[ -f "$carry/$archive" ] || { echo "no $carry/$archive: carry $(basename "$carry") (made by $packer)"; return 2; }
	(cd "$carry" && sha256sum --check --quiet SHA256SUMS) || { echo "$archive does not match its SHA256SUMS: pack and carry it again"; return 2; }
	rm -rf "$state" && mkdir -p "$state"
	tar -xzf "$carry/$archive" -C "$state" || { echo "$archive does not unpack"; return 2; }
	(cd "$state" && sha256sum --check --quiet SHA256SUMS) || { echo "unpacked files do not match their SHA256SUMS"; return 2; }
	echo "== $archive of commit $(cat "$state/commit")"
}
