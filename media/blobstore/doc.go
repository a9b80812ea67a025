// Package blobstore keeps media blobs in object storage: Amazon S3 and
// S3-compatible services (s3://) and a local directory (file://) in every
// build, and Google Cloud Storage (gs://) and Azure Blob Storage (azblob://)
// in builds with the agnogo_gcs and agnogo_azure build tags.
//
// Importing the package registers those schemes with [media.Open]:
//
//	import _ "github.com/agnogo/agnogo/media/blobstore"
//
//	store, err := media.Open(ctx, "s3://my-bucket?region=eu-west-1&prefix=media/")
//
// # What each scheme links
//
// s3:// is served by the AWS SDK for Go v2 directly, and file:// by this
// package, so a default build links no gocloud.dev. That matters beyond
// gocloud's own size: its core links gRPC, whose golang.org/x/net/trace
// uses html/template, and the reflection of text/template keeps the linker
// from dropping unused methods anywhere in the binary.
//
// gs:// and azblob:// go through gocloud.dev/blob. Their drivers are large
// (together about 36 MB of binary and 25 MiB of idle memory), so they are
// built in only on request; without their tags they are refused with a
// message naming the tag:
//
//	go build -tags agnogo_gcs,agnogo_azure ./cmd/agnogo
//
// Those builds also have [New], which wraps any gocloud.dev/blob bucket the
// program opened itself.
//
// # s3://
//
// "s3://bucket?region=eu-west-1&prefix=media/" names the bucket as the
// URL's host. Credentials come from the AWS environment, as for any AWS SDK
// program: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the
// shared config files, web identity, SSO, or the instance's role. The query
// parameters are those gocloud.dev's s3blob took, so existing URLs keep
// working:
//
//   - prefix: prepended to every blob id ("media/").
//   - region: the AWS region; defaults to the environment's.
//   - endpoint: the service's URL, for S3-compatible services
//     ("https://minio.example.com:9000").
//   - use_path_style (or s3ForcePathStyle): "true" puts the bucket in the
//     URL's path instead of its host name, as MinIO and most S3-compatible
//     services want.
//   - hostname_immutable: "true" keeps endpoint's host name as it is (the
//     bucket goes in the path).
//   - disable_https: "true" talks plain HTTP.
//   - profile: the shared config profile to use.
//   - role: the ARN of an IAM role to assume.
//   - anonymous: "true" sends unsigned requests (a public bucket).
//   - accelerate, dualstack, fips: "true" uses S3 Transfer Acceleration,
//     dual-stack or FIPS endpoints.
//   - ssetype (AES256, aws:kms, aws:kms:dsse) and kmskeyid: server-side
//     encryption of new blobs.
//   - request_checksum_calculation, response_checksum_validation:
//     when_supported (the SDK's default) or when_required, which some
//     S3-compatible services need.
//   - rate_limiter_capacity: the client-side retry token bucket; none by
//     default.
//
// Any other parameter is refused, naming it. A blob is the object
// <prefix><id>, its MIME type the object's Content-Type and its file name
// the object's "filename" metadata (x-amz-meta-filename, URL-escaped): the
// layout gocloud.dev wrote, so blobs stored by earlier versions read back
// with their names. It is uploaded in parts of [DefaultPartSize] as it is
// read, holding one part in memory (parts are larger when the blob's size
// limit would not fit in S3's 10,000 parts); a blob of one part is a single
// PUT, and a failed or refused Put abandons its multipart upload.
//
// # file://
//
// "file:///var/lib/agnogo/media" keeps blobs as files in a directory, in
// the layout of gocloud.dev's fileblob, which served file:// before: the
// blob <prefix><id>, and beside it <prefix><id>.attrs, a JSON file holding
// its content type and file name. Directories written by earlier versions
// read back as they were. The directory must exist unless the URL says
// create_dir=true. Parameters: prefix, create_dir, dir_file_mode (the mode
// of the directories it creates, 0777 before the umask by default),
// metadata=skip (no .attrs files: blobs lose their type and name), and
// no_tmp_dir, accepted for compatibility: a blob is always written to a
// temporary file beside its final name and renamed into place once whole.
//
// # public_url
//
// Every scheme takes media's own public_url parameter (see [media.Open]).
package blobstore
