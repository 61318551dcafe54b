// Command image builds bicyc's container image from files on this machine,
// without a container engine or a registry (`make image`; docs/cluster.md):
//
//	go run ./deploy/image --bin build/image/bin --out build/image/bicyc.tar
//
// The image is FROM scratch: bicyc and bicyc-infer in /usr/local/bin, ONNX
// Runtime in /usr/local/lib/bicyc, the shared libraries they load found by
// reading their ELF dependencies (OpenBLAS, whose one Debian library holds
// every kernel set and picks one by CPU when it loads; libjpeg-turbo;
// libgfortran; libstdc++; glibc and its loader), CA certificates,
// Fashion-MNIST where the configurations read it, and a non-root user
// bicyc (uid and gid 10001, numeric so that Kubernetes' runAsNonRoot can
// check it) whose home is the working directory. With --gpu-dir, a second
// reference (<ref>-gpu) adds ONNX Runtime's CUDA and TensorRT providers
// (`make setup-gpu`) as one more layer and points BICYC_ORT_LIB at them.
//
// The output is one tar file, an OCI image layout and a docker-archive at
// once; the same inputs and --epoch give the same bytes.
package main

import (
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/ociimage"
)

// The non-root user the image runs as.
const (
	uid  = 10001
	home = "/home/bicyc"
)

// libDirs are where the dynamic loader looks for libraries on Debian
// (x86-64 multiarch); the image keeps them under the same names.
var libDirs = []string{"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"}

const imageLibDir = "/usr/lib/x86_64-linux-gnu"

func main() {
	binDir := flag.String("bin", "build/image/bin", "directory holding the bicyc and bicyc-infer binaries to install")
	ortDir := flag.String("ort-dir", filepath.Dir(infer.InstalledLibraryPath), "ONNX Runtime's directory (scripts/setup.sh)")
	gpuDir := flag.String("gpu-dir", "", "ONNX Runtime with its GPU providers (make setup-gpu); empty: no -gpu image")
	data := flag.String("data", "/usr/share/datasets/fashion-mnist", "Fashion-MNIST, installed at the same path in the image")
	certs := flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "CA certificate bundle")
	ref := flag.String("ref", "localhost/bicyc:dev", "reference the image loads as (the GPU image: <ref>-gpu)")
	revision := flag.String("revision", "", "source revision, written as the label org.opencontainers.image.revision")
	out := flag.String("out", "build/image/bicyc.tar", "image archive to write")
	epoch := flag.String("epoch", os.Getenv("SOURCE_DATE_EPOCH"), "creation time and every file's modification time, in seconds since 1970 (default $SOURCE_DATE_EPOCH, else 0)")
	flag.Parse()

	if err := run(*binDir, *ortDir, *gpuDir, *data, *certs, *ref, *revision, *out, *epoch); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binDir, ortDir, gpuDir, data, certs, ref, revision, out, epoch string) error {
	created, err := createdTime(epoch)
	if err != nil {
		return err
	}
	bins := []string{filepath.Join(binDir, "bicyc"), filepath.Join(binDir, "bicyc-infer")}
	ortLib, err := filepath.EvalSymlinks(filepath.Join(ortDir, "libonnxruntime.so"))
	if err != nil {
		return fmt.Errorf("ONNX Runtime: %w (run scripts/setup.sh)", err)
	}
	// The binaries link their libraries; ONNX Runtime is opened at run time
	// (dlopen), so its own dependencies are followed as well.
	libs, interp, err := dependencies(append(bins, ortLib))
	if err != nil {
		return err
	}
	dataFiles, err := dirEntries(data, data)
	if err != nil {
		return err
	}
	var layers []ociimage.Layer
	for _, l := range []struct {
		entries []ociimage.Entry
		comment string
	}{
		{systemEntries(certs, interp, libs), "system: user bicyc, CA certificates, shared libraries"},
		{dataFiles, "data: Fashion-MNIST"},
		{appEntries(bins, ortLib), "bicyc, bicyc-infer, ONNX Runtime"},
	} {
		layer, err := ociimage.BuildLayer(l.entries, created, l.comment)
		if err != nil {
			return err
		}
		layers = append(layers, layer)
	}
	cfg := imageConfig(revision)
	images := []ociimage.Image{{Ref: ref, Layers: layers, Config: cfg}}
	if gpuDir != "" {
		gpu, err := gpuImage(gpuDir, ref, layers, cfg, created)
		if err != nil {
			return err
		}
		images = append(images, gpu)
	}
	return writeArchive(out, images, created)
}

// createdTime is the images' creation time and every file's: epoch (seconds since 1970), or 1970 itself
// when empty.
func createdTime(epoch string) (time.Time, error) {
	if epoch == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	s, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("--epoch %q: want seconds since 1970", epoch)
	}
	return time.Unix(s, 0).UTC(), nil
}

// systemEntries are the system layer's files: the user, name service and CA certificates (from certs), a
// machine-id, /tmp and the home directory, and the shared libraries libs (image name to file) with the
// loader interp.
func systemEntries(certs, interp string, libs map[string]string) []ociimage.Entry {
	system := []ociimage.Entry{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nbicyc:x:10001:10001:bicyc:/home/bicyc:/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nbicyc:x:10001:\n")},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("passwd: files\ngroup: files\nhosts: files dns\n")},
		{Path: "/etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Source: certs},
		// ONNX Runtime 1.29.0 (the npm build) crashes creating its
		// environment when /etc/machine-id is missing or empty; podman does
		// not provide one. "uninitialized" is the content machine-id(5)
		// defines for an image, so no machine identity is shipped.
		{Path: "/etc/machine-id", Mode: 0o444, Data: []byte("uninitialized\n")},
		{Path: "/tmp", Mode: 0o1777, Dir: true},
		{Path: home, Mode: 0o755, UID: uid, GID: uid, Dir: true},
		// Debian's merged /usr: /lib is /usr/lib, and the loader's path
		// written into every binary, /lib64/ld-linux-x86-64.so.2, exists.
		{Path: "/lib", Link: "usr/lib"},
		{Path: interp, Link: imageLibDir + "/" + filepath.Base(interp)},
	}
	for _, name := range slices.Sorted(maps.Keys(libs)) {
		system = append(system, ociimage.Entry{Path: imageLibDir + "/" + name, Mode: 0o755, Source: libs[name]})
	}
	return system
}

// appEntries are the application layer's files: bicyc and bicyc-infer (bins) and ONNX Runtime (ortLib)
// where infer looks for it.
func appEntries(bins []string, ortLib string) []ociimage.Entry {
	return []ociimage.Entry{
		{Path: "/usr/local/bin/bicyc", Mode: 0o755, Source: bins[0]},
		{Path: "/usr/local/bin/bicyc-infer", Mode: 0o755, Source: bins[1]},
		{Path: infer.InstalledLibraryPath, Link: filepath.Base(ortLib)},
		{Path: filepath.Dir(infer.InstalledLibraryPath) + "/" + filepath.Base(ortLib), Mode: 0o644, Source: ortLib},
	}
}

// imageConfig is the image's user, environment, command and labels (the commit revision when known).
func imageConfig(revision string) ociimage.Config {
	labels := map[string]string{
		"org.opencontainers.image.title":       "bicyc",
		"org.opencontainers.image.description": "bicyc (training, sweeps) and bicyc-infer (classification, serving) with ONNX Runtime and Fashion-MNIST",
	}
	if revision != "" {
		labels["org.opencontainers.image.revision"] = revision
	}
	return ociimage.Config{
		User:       fmt.Sprintf("%d:%d", uid, uid),
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home},
		Cmd:        []string{"bicyc", "--help"},
		WorkingDir: home,
		Labels:     labels,
	}
}

// gpuImage is the image ref-gpu: layers and one more with ONNX Runtime's GPU providers from gpuDir, and
// cfg with BICYC_ORT_LIB naming the GPU build.
func gpuImage(gpuDir, ref string, layers []ociimage.Layer, cfg ociimage.Config, created time.Time) (ociimage.Image, error) {
	gpu, err := dirEntries(gpuDir, filepath.Dir(infer.InstalledLibraryPath)+"/gpu")
	if err != nil {
		return ociimage.Image{}, err
	}
	layer, err := ociimage.BuildLayer(gpu, created, "ONNX Runtime's CUDA and TensorRT providers")
	if err != nil {
		return ociimage.Image{}, err
	}
	cfg.Env = append(append([]string(nil), cfg.Env...), "BICYC_ORT_LIB="+filepath.Dir(infer.InstalledLibraryPath)+"/gpu/libonnxruntime.so")
	return ociimage.Image{Ref: ref + "-gpu", Layers: append(append([]ociimage.Layer(nil), layers...), layer), Config: cfg}, nil
}

// writeArchive writes the images' archive to out.tmp, then renames it to out.
func writeArchive(out string, images []ociimage.Image, created time.Time) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := ociimage.WriteArchive(f, images, created); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// dependencies returns the shared libraries files need, directly or
// through each other, by soname -> file on this machine (symbolic links
// resolved), and the dynamic loader they name.
func dependencies(files []string) (map[string]string, string, error) {
	libs := map[string]string{}
	interp := ""
	queue := append([]string(nil), files...)
	for len(queue) > 0 {
		file := queue[0]
		queue = queue[1:]
		f, err := elf.Open(file)
		if err != nil {
			return nil, "", err
		}
		needed, err := f.ImportedLibraries()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				b := make([]byte, p.Filesz)
				if _, err := p.ReadAt(b, 0); err == nil {
					interp = strings.TrimRight(string(b), "\x00")
				}
			}
		}
		f.Close()
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", file, err)
		}
		for _, name := range needed {
			if _, seen := libs[name]; seen {
				continue
			}
			path, err := findLib(name)
			if err != nil {
				return nil, "", fmt.Errorf("%s needs %s: %w", file, name, err)
			}
			libs[name] = path
			queue = append(queue, path)
		}
	}
	if interp == "" {
		return nil, "", errors.New("no dynamic loader named by the binaries (PT_INTERP)")
	}
	// The loader itself, under its own name in the library directory.
	path, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return nil, "", fmt.Errorf("dynamic loader %s: %w", interp, err)
	}
	libs[filepath.Base(interp)] = path
	return libs, interp, nil
}

func findLib(name string) (string, error) {
	for _, d := range libDirs {
		if p, err := filepath.EvalSymlinks(filepath.Join(d, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %s", strings.Join(libDirs, ", "))
}

// dirEntries lists the regular files and symbolic links below dir as
// entries under target, read-only for everyone.
func dirEntries(dir, target string) ([]ociimage.Entry, error) {
	var entries []ociimage.Entry
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		e := ociimage.Entry{Path: filepath.ToSlash(filepath.Join(target, rel)), Mode: 0o644, Source: p}
		if d.Type()&os.ModeSymlink != 0 {
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e = ociimage.Entry{Path: e.Path, Link: link}
		} else if !d.Type().IsRegular() {
			return fmt.Errorf("%s: neither a file nor a symbolic link", p)
		}
		entries = append(entries, e)
		return nil
	})
	if err == nil && len(entries) == 0 {
		err = fmt.Errorf("%s: no files", dir)
	}
	return entries, err
}
