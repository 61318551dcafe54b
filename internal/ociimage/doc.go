// Package ociimage writes container images without a container engine or a
// registry: layers are tar archives built from a list of files, written byte
// for byte the same from the same inputs (entries sorted by path, one fixed
// modification time, owners and modes stated by the caller, gzip without a
// timestamp), and the image is one tar file that is both an OCI image layout
// (oci-layout, index.json, blobs/sha256/...) and a docker-archive
// (manifest.json), so `podman load`, `skopeo copy oci-archive:...`, `umoci`
// and `docker load` all read it.
//
// The formats are the OCI Image Format Specification v1.1 (image layout,
// manifest, configuration) and the docker-archive manifest.json that
// `docker save` writes beside it.
//
// May import: nothing of bicyc.
package ociimage
