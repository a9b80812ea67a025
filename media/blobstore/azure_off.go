//go:build !agnogo_azure

package blobstore

import "github.com/agnogo/agnogo/media"

func init() { media.Register("azblob", notBuiltIn("azblob", "agnogo_azure")) }
