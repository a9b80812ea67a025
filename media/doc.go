// Package media keeps the bytes of a run's images, audio, video and files
// out of memory and out of run rows.
//
// Without it an uploaded file is read whole into memory, travels base64
// inside the run's messages, and is stored in the run row — a 30 MB upload
// costs hundreds of megabytes of memory and a row as large as the file. With
// a [Store], AgentOS streams each upload into the store as it arrives, and
// the run keeps a reference instead of the bytes: a medium whose media_id
// names the blob (see run.Image.MediaID), with its size, MIME type and file
// name, and its url when the store serves blobs publicly. The agent reads the
// blob back only for the model call that needs it (agent.Config.Media).
//
// A store is opened from a URL with [Open]:
//
//	store, err := media.Open(ctx, "./data/media")             // a local directory
//	store, err := media.Open(ctx, "s3://bucket?region=eu-west-1") // needs media/blobstore
//
// An empty URL or a plain path is a directory on this machine ([NewLocal]);
// a URL with a scheme is opened by the implementation registered for it
// with [Register]. Importing github.com/agnogo/agnogo/media/blobstore
// registers s3:// and file:// (and gs:// and azblob:// in builds with its
// build tags); this package itself depends on the standard library and run
// only, so a program that keeps media on local disk does not link the cloud
// SDKs.
//
// Every store bounds what it accepts with [Limits] — 32 MiB per blob by
// default, optionally per MIME type — and refuses a larger blob with a
// [*TooLargeError] without keeping any of it. The conformance suite in
// media/mediatest runs against every implementation.
package media
