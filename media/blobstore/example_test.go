package blobstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agnogo/agnogo/media"
	_ "github.com/agnogo/agnogo/media/blobstore" // s3:// and file://
)

// Importing the package makes media.Open take s3:// and file:// URLs. Here
// a directory, served publicly at a CDN's address.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "media")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	store, err := media.Open(ctx, "file://"+filepath.ToSlash(dir)+"?prefix=uploads/&public_url=https://cdn.example.com/uploads/")
	if err != nil {
		panic(err)
	}
	defer store.Close()
	ref, err := store.Put(ctx, strings.NewReader("hello"), media.Info{MimeType: "text/plain", Filename: "hello.txt"})
	if err != nil {
		panic(err)
	}
	stat, err := store.Stat(ctx, ref.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(stat.Size, stat.MimeType, stat.Filename)
	fmt.Println(stat.URL == "https://cdn.example.com/uploads/"+ref.ID)
	// Output:
	// 5 text/plain hello.txt
	// true
}
