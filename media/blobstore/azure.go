//go:build agnogo_azure

package blobstore

import _ "gocloud.dev/blob/azureblob" // azblob://

func init() { register("azblob", openBucketURL) }
