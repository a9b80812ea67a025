//go:build agnogo_azure

package blobstore

import (
	_ "gocloud.dev/blob/azureblob" // azblob://

	"github.com/agnogo/agnogo/media"
)

func init() { media.Register("azblob", openURL) }
