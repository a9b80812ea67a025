//go:build agnogo_gcs

package blobstore

import _ "gocloud.dev/blob/gcsblob" // gs://

func init() { register("gs", openBucketURL) }
