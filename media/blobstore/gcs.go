//go:build agnogo_gcs

package blobstore

import (
	_ "gocloud.dev/blob/gcsblob" // gs://

	"github.com/agnogo/agnogo/media"
)

func init() { media.Register("gs", openURL) }
