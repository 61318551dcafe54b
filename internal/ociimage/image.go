package ociimage

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Media types of the OCI Image Format Specification v1.1.
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Config is what a container of the image runs with (the configuration's
// "config" object).
type Config struct {
	User       string            `json:"User,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

// Image is one tagged image: its layers, bottom first, and its Config.
// Several images of one archive may share layers (they are stored once).
type Image struct {
	Ref    string // the reference it loads as, e.g. localhost/bicyc:dev
	Layers []Layer
	Config Config
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// WriteArchive writes images into w as one tar file that is an OCI image
// layout and a docker-archive at once. created is the images' creation time
// and every archive member's modification time.
func WriteArchive(w io.Writer, images []Image, created time.Time) error {
	blobs := map[string][]byte{}
	var index []descriptor
	var docker []map[string]any
	for _, img := range images {
		man, dockerEntry, err := addImage(blobs, img, created)
		if err != nil {
			return err
		}
		index = append(index, man)
		docker = append(docker, dockerEntry)
	}
	idx, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaIndex, "manifests": index})
	if err != nil {
		return err
	}
	dm, err := json.Marshal(docker)
	if err != nil {
		return err
	}
	return writeTar(w, blobs, created, []namedFile{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", idx},
		{"manifest.json", dm},
	})
}

// addImage adds img's config, layers and manifest to blobs (digest to content) and returns the manifest's
// descriptor for the OCI index and the image's entry of docker-archive's manifest.json.
func addImage(blobs map[string][]byte, img Image, created time.Time) (descriptor, map[string]any, error) {
	if !strings.Contains(img.Ref, ":") {
		return descriptor{}, nil, fmt.Errorf("ociimage: reference %q has no tag", img.Ref)
	}
	cfg, err := json.Marshal(configFile(img, created))
	if err != nil {
		return descriptor{}, nil, err
	}
	cfgDigest := digest(cfg)
	blobs[cfgDigest] = cfg
	m := map[string]any{
		"schemaVersion": 2, "mediaType": mediaManifest,
		"config": descriptor{MediaType: mediaConfig, Digest: cfgDigest, Size: len(cfg)},
	}
	var layers []descriptor
	var dockerLayers []string
	for _, l := range img.Layers {
		blobs[l.Digest] = l.Blob
		layers = append(layers, descriptor{MediaType: mediaLayer, Digest: l.Digest, Size: len(l.Blob)})
		dockerLayers = append(dockerLayers, blobPath(l.Digest))
	}
	m["layers"] = layers
	man, err := json.Marshal(m)
	if err != nil {
		return descriptor{}, nil, err
	}
	manDigest := digest(man)
	blobs[manDigest] = man
	d := descriptor{
		MediaType: mediaManifest, Digest: manDigest, Size: len(man),
		Annotations: map[string]string{
			"io.containerd.image.name":          img.Ref,
			"org.opencontainers.image.ref.name": img.Ref[strings.LastIndex(img.Ref, ":")+1:],
		},
	}
	return d, map[string]any{"Config": blobPath(cfgDigest), "RepoTags": []string{img.Ref}, "Layers": dockerLayers}, nil
}

// namedFile is a file at the archive's top level.
type namedFile struct {
	name string
	data []byte
}

// writeTar writes the archive: the blob directories, the blobs in digest order, then files, every entry
// dated created.
func writeTar(w io.Writer, blobs map[string][]byte, created time.Time, files []namedFile) error {
	tw := tar.NewWriter(w)
	put := func(name string, b []byte) error {
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: created, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Mode: 0o755, ModTime: created, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	digests := make([]string, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		if err := put(blobPath(d), blobs[d]); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := put(f.name, f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

func blobPath(d string) string { return "blobs/sha256/" + strings.TrimPrefix(d, "sha256:") }

func configFile(img Image, created time.Time) map[string]any {
	var diffIDs []string
	var history []map[string]any
	for _, l := range img.Layers {
		diffIDs = append(diffIDs, l.DiffID)
		history = append(history, map[string]any{"created": created.UTC().Format(time.RFC3339), "comment": l.Comment})
	}
	return map[string]any{
		"created":      created.UTC().Format(time.RFC3339),
		"architecture": "amd64",
		"os":           "linux",
		"config":       img.Config,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
		"history":      history,
	}
}
