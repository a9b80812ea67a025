package blobstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// maxUploadParts is the most parts S3 assembles an object from.
const maxUploadParts = 10_000

// abortTimeout bounds the request that abandons a failed multipart upload,
// which is sent even when the Put's context has ended.
const abortTimeout = 30 * time.Second

// firstBufferSize is the capacity a part buffer starts at; it grows to the
// part size only for a blob that large.
const firstBufferSize = 64 << 10

// partSizeFor returns the part size of an upload bounded by limit (-1:
// unbounded): partSize, or larger when limit bytes would not fit in
// [maxUploadParts] parts of it.
func partSizeFor(partSize int, limit int64) int {
	if limit > int64(partSize)*maxUploadParts {
		return int(limit/maxUploadParts) + 1
	}
	return partSize
}

// s3Upload streams one object into S3. The bytes written fill a part; a
// full part is sent only once more bytes arrive, so an object of at most one
// part is a single PutObject, and a larger one a multipart upload begun with
// its first part. The upload holds one part in memory at a time.
type s3Upload struct {
	ctx         context.Context
	bucket      *s3Bucket
	key         string
	contentType string
	metadata    map[string]string
	partSize    int

	part     []byte
	uploadID *string
	parts    []types.CompletedPart
}

// Write adds p to the object, sending each part that fills up.
func (u *s3Upload) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if len(u.part) == u.partSize {
			if err := u.sendPart(); err != nil {
				return written, err
			}
		}
		n := min(len(p), u.partSize-len(u.part))
		u.reserve(n)
		u.part = append(u.part, p[:n]...)
		p = p[n:]
		written += n
	}
	return written, nil
}

// reserve makes room for n more bytes in the part, growing it no larger
// than the part size.
func (u *s3Upload) reserve(n int) {
	need := len(u.part) + n
	if need <= cap(u.part) {
		return
	}
	grown := make([]byte, len(u.part), min(max(need, 2*cap(u.part), firstBufferSize), u.partSize))
	copy(grown, u.part)
	u.part = grown
}

// sendPart uploads the full part as the next part of the multipart upload,
// beginning the upload with the first.
func (u *s3Upload) sendPart() error {
	if u.uploadID == nil {
		out, err := u.bucket.client.CreateMultipartUpload(u.ctx, &s3.CreateMultipartUploadInput{
			Bucket:               aws.String(u.bucket.name),
			Key:                  aws.String(u.key),
			ContentType:          aws.String(u.contentType),
			Metadata:             u.metadata,
			ChecksumAlgorithm:    u.bucket.checksum,
			ServerSideEncryption: u.bucket.encryption,
			SSEKMSKeyId:          nonEmpty(u.bucket.kmsKeyID),
		})
		if err != nil {
			return fmt.Errorf("begin multipart upload: %w", err)
		}
		u.uploadID = out.UploadId
	}
	if len(u.parts) == maxUploadParts {
		return fmt.Errorf("the blob needs more than %d parts of %d bytes", maxUploadParts, u.partSize)
	}
	number := aws.Int32(int32(len(u.parts) + 1))
	out, err := u.bucket.client.UploadPart(u.ctx, &s3.UploadPartInput{
		Bucket:            aws.String(u.bucket.name),
		Key:               aws.String(u.key),
		UploadId:          u.uploadID,
		PartNumber:        number,
		Body:              bytes.NewReader(u.part),
		ContentLength:     aws.Int64(int64(len(u.part))),
		ChecksumAlgorithm: u.bucket.checksum,
	})
	if err != nil {
		return fmt.Errorf("upload part %d: %w", *number, err)
	}
	u.parts = append(u.parts, types.CompletedPart{
		PartNumber:        number,
		ETag:              out.ETag,
		ChecksumCRC32:     out.ChecksumCRC32,
		ChecksumCRC32C:    out.ChecksumCRC32C,
		ChecksumCRC64NVME: out.ChecksumCRC64NVME,
		ChecksumMD5:       out.ChecksumMD5,
		ChecksumSHA1:      out.ChecksumSHA1,
		ChecksumSHA256:    out.ChecksumSHA256,
		ChecksumSHA512:    out.ChecksumSHA512,
		ChecksumXXHASH128: out.ChecksumXXHASH128,
		ChecksumXXHASH3:   out.ChecksumXXHASH3,
		ChecksumXXHASH64:  out.ChecksumXXHASH64,
	})
	u.part = u.part[:0]
	return nil
}

// commit implements [objectWriter]: it puts an object of one part, or sends
// the last part and completes the multipart upload (abandoning it if that
// fails).
func (u *s3Upload) commit() error {
	defer func() { u.part = nil }()
	if u.uploadID == nil {
		_, err := u.bucket.client.PutObject(u.ctx, &s3.PutObjectInput{
			Bucket:               aws.String(u.bucket.name),
			Key:                  aws.String(u.key),
			Body:                 bytes.NewReader(u.part),
			ContentLength:        aws.Int64(int64(len(u.part))),
			ContentType:          aws.String(u.contentType),
			Metadata:             u.metadata,
			ChecksumAlgorithm:    u.bucket.checksum,
			ServerSideEncryption: u.bucket.encryption,
			SSEKMSKeyId:          nonEmpty(u.bucket.kmsKeyID),
		})
		if err != nil {
			return fmt.Errorf("put object: %w", err)
		}
		return nil
	}
	err := u.sendPart()
	if err == nil {
		_, err = u.bucket.client.CompleteMultipartUpload(u.ctx, &s3.CompleteMultipartUploadInput{
			Bucket:          aws.String(u.bucket.name),
			Key:             aws.String(u.key),
			UploadId:        u.uploadID,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: u.parts},
		})
		if err != nil {
			err = fmt.Errorf("complete multipart upload: %w", err)
		}
	}
	if err != nil {
		if abortErr := u.abort(); abortErr != nil {
			err = errors.Join(err, abortErr)
		}
		return err
	}
	return nil
}

// abort implements [objectWriter]: it abandons the multipart upload, if one
// began, so that S3 drops its parts; an object of one part was never sent.
func (u *s3Upload) abort() error {
	u.part = nil
	if u.uploadID == nil {
		return nil
	}
	// The Put's context may be what ended it: the parts are dropped anyway.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), abortTimeout)
	defer cancel()
	_, err := u.bucket.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket:   aws.String(u.bucket.name),
		Key:      aws.String(u.key),
		UploadId: u.uploadID,
	})
	u.uploadID = nil
	if err != nil {
		return fmt.Errorf("abort multipart upload: %w", err)
	}
	return nil
}

// nonEmpty is s as an optional parameter: nil when empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}
