//go:build !agnogo_gcs

package blobstore

import "github.com/agnogo/agnogo/media"

func init() { media.Register("gs", notBuiltIn("gs", "agnogo_gcs")) }
