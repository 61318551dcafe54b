package data

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/internal/imagetest"
)

func TestOpen(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"train/a/1.png", "train/b/1.png", "test/a/1.png", "test/b/1.png"} {
		imagetest.WritePNG(t, filepath.Join(root, "folders", name), imagetest.Gradient(12, 10, len(name)))
	}
	writeFile(t, filepath.Join(root, "c100", "train.bin"), cifarRecords([][]byte{{1, 2}}))
	writeFile(t, filepath.Join(root, "c100", "test.bin"), cifarRecords([][]byte{{1, 3}}))
	cases := []struct {
		src        Source
		trainLen   int
		c, h, w, k int
		want       error
		msg        string
	}{
		{Source{Kind: KindFashionMNIST}, 60000, 1, 28, 28, 10, nil, ""},
		{Source{Kind: KindCIFAR100, Dir: filepath.Join(root, "c100")}, 1, 3, 32, 32, 100, nil, ""},
		{Source{Kind: KindImageFolder, Dir: filepath.Join(root, "folders"), Height: 8, Width: 6}, 2, 3, 8, 6, 2, nil, ""},
		{Source{Kind: KindImageFolder, TrainDir: filepath.Join(root, "folders", "train"), TestDir: filepath.Join(root, "folders", "test"), Channels: 1, Height: 8, Width: 8}, 2, 1, 8, 8, 2, nil, ""},
		{Source{Kind: KindImageFolder, Dir: filepath.Join(root, "folders")}, 0, 0, 0, 0, 0, ErrSource, "size 0x0"},
		{Source{Kind: KindImageFolder, TrainDir: "x"}, 0, 0, 0, 0, 0, ErrSource, "train_dir and test_dir"},
		{Source{Kind: KindMNIST}, 0, 0, 0, 0, 0, ErrSource, `"mnist" needs dir`},
		{Source{Kind: KindCIFAR10, Dir: filepath.Join(root, "nowhere")}, 0, 0, 0, 0, 0, fs.ErrNotExist, "nowhere"},
		{Source{Kind: "imagenet"}, 0, 0, 0, 0, 0, ErrSource, `unknown kind "imagenet"`},
	}
	for i, c := range cases {
		train, test, err := Open(c.src)
		if c.want != nil {
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("case %d: got %v, want %v mentioning %q", i, err, c.want, c.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if train.Len() != c.trainLen || train.Channels != c.c || train.Height != c.h || train.Width != c.w || train.NumClasses() != c.k || test.NumClasses() != c.k {
			t.Errorf("case %d: train %d images %dx%dx%d, %d classes", i, train.Len(), train.Channels, train.Height, train.Width, train.NumClasses())
		}
	}
}
