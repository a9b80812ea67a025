package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/agnogo/agnogo/media"
)

// s3Params are the query parameters of an s3:// URL besides prefix: the
// ones gocloud.dev's s3blob took, which earlier versions opened s3:// URLs
// with.
var s3Params = []string{
	"accelerate", "anonymous", "awssdk", "disable_https", "dualstack", "endpoint", "fips", "hostname_immutable",
	"kmskeyid", "prefix", "profile", "rate_limiter_capacity", "region", "request_checksum_calculation",
	"response_checksum_validation", "role", "s3ForcePathStyle", "ssetype", "use_path_style",
}

// s3Bucket keeps objects in an S3 bucket through the AWS SDK.
type s3Bucket struct {
	client *s3.Client
	name   string
	// partSize is the size of the parts of an upload when its limit does
	// not call for larger ones.
	partSize int
	// checksum is the algorithm uploads are checksummed with: CRC32, or
	// none when the configuration asks for checksums only where required.
	checksum   types.ChecksumAlgorithm
	encryption types.ServerSideEncryption
	kmsKeyID   string
}

// openS3URL opens "s3://bucket?region=…" (see the package documentation).
func openS3URL(ctx context.Context, u *url.URL, opts media.Options) (*Store, error) {
	bucket, prefix, err := openS3Bucket(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("media: s3 bucket %s: %w", u.Host, err)
	}
	return newStore(bucket, prefix, opts)
}

// openS3Bucket reads the URL's parameters into a client of its bucket.
func openS3Bucket(ctx context.Context, u *url.URL) (*s3Bucket, string, error) {
	if u.Host == "" {
		return nil, "", errors.New("the URL names no bucket: write s3://<bucket>")
	}
	q := u.Query()
	prefix, err := bucketPrefix(q)
	if err != nil {
		return nil, "", err
	}
	take := func(name string) string {
		value := q.Get(name)
		q.Del(name)
		return value
	}
	takeBool := func(name string) (bool, error) {
		value := take(name)
		if value == "" {
			return false, nil
		}
		return parseBool(name, value)
	}

	var (
		loadOptions   []func(*config.LoadOptions) error
		clientOptions []func(*s3.Options)
		bucket        = &s3Bucket{name: u.Host, partSize: DefaultPartSize}
	)
	if region := take("region"); region != "" {
		loadOptions = append(loadOptions, config.WithRegion(region))
	}
	if profile := take("profile"); profile != "" {
		loadOptions = append(loadOptions, config.WithSharedConfigProfile(profile))
	}
	anonymous, err := takeBool("anonymous")
	if err != nil {
		return nil, "", err
	}
	if anonymous {
		loadOptions = append(loadOptions, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	for _, endpointOption := range []struct {
		name string
		set  func()
	}{
		{"dualstack", func() {
			loadOptions = append(loadOptions, config.WithUseDualStackEndpoint(aws.DualStackEndpointStateEnabled))
		}},
		{"fips", func() { loadOptions = append(loadOptions, config.WithUseFIPSEndpoint(aws.FIPSEndpointStateEnabled)) }},
		{"accelerate", func() { clientOptions = append(clientOptions, func(o *s3.Options) { o.UseAccelerate = true }) }},
	} {
		on, err := takeBool(endpointOption.name)
		if err != nil {
			return nil, "", err
		}
		if on {
			endpointOption.set()
		}
	}
	if value := take("request_checksum_calculation"); value != "" {
		mode, err := checksumMode(value, aws.RequestChecksumCalculationWhenSupported, aws.RequestChecksumCalculationWhenRequired)
		if err != nil {
			return nil, "", fmt.Errorf("invalid value for %q: %w", "request_checksum_calculation", err)
		}
		loadOptions = append(loadOptions, config.WithRequestChecksumCalculation(mode))
	}
	if value := take("response_checksum_validation"); value != "" {
		mode, err := checksumMode(value, aws.ResponseChecksumValidationWhenSupported, aws.ResponseChecksumValidationWhenRequired)
		if err != nil {
			return nil, "", fmt.Errorf("invalid value for %q: %w", "response_checksum_validation", err)
		}
		loadOptions = append(loadOptions, config.WithResponseChecksumValidation(mode))
	}
	// As with gocloud.dev, retries are not throttled by a client-side token
	// bucket unless the URL sizes one.
	rateLimiter := retry.RateLimiter(ratelimit.None)
	if value := take("rate_limiter_capacity"); value != "" {
		capacity, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return nil, "", fmt.Errorf("invalid value for %q: %w", "rate_limiter_capacity", err)
		}
		if capacity > 0 {
			rateLimiter = ratelimit.NewTokenRateLimit(uint(capacity))
		}
	}
	loadOptions = append(loadOptions, config.WithRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.RateLimiter = rateLimiter })
	}))

	endpoint := take("endpoint")
	hostnameImmutable, err := takeBool("hostname_immutable")
	if err != nil {
		return nil, "", err
	}
	if endpoint != "" {
		clientOptions = append(clientOptions, func(o *s3.Options) { o.BaseEndpoint = aws.String(endpoint) })
		if hostnameImmutable {
			// The endpoint's host is used as it is: the bucket goes in the
			// path.
			clientOptions = append(clientOptions, func(o *s3.Options) { o.UsePathStyle = true })
		}
	}
	if value := take("disable_https"); value != "" {
		disable, err := parseBool("disable_https", value)
		if err != nil {
			return nil, "", err
		}
		clientOptions = append(clientOptions, func(o *s3.Options) { o.EndpointOptions.DisableHTTPS = disable })
	}
	for _, name := range []string{"use_path_style", "s3ForcePathStyle"} {
		if value := take(name); value != "" {
			pathStyle, err := parseBool(name, value)
			if err != nil {
				return nil, "", err
			}
			clientOptions = append(clientOptions, func(o *s3.Options) { o.UsePathStyle = o.UsePathStyle || pathStyle })
		}
	}
	if value := take("ssetype"); value != "" {
		if bucket.encryption, err = encryptionType(value); err != nil {
			return nil, "", err
		}
	}
	bucket.kmsKeyID = take("kmskeyid")
	role := take("role")
	if role != "" && !strings.HasPrefix(role, "arn:") {
		return nil, "", fmt.Errorf("invalid value for %q: %q is not an ARN (arn:…)", "role", role)
	}
	take("awssdk") // chose between AWS SDK versions in gocloud.dev; v2 is the only one now
	if err := unknownParams(q, s3Params); err != nil {
		return nil, "", err
	}

	cfg, err := config.LoadDefaultConfig(ctx, loadOptions...)
	if err != nil {
		return nil, "", fmt.Errorf("load the AWS configuration: %w", err)
	}
	if role != "" {
		if cfg.Region == "" {
			return nil, "", errors.New("assuming a role needs a region: set region= or AWS_REGION")
		}
		cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), role))
	}
	if cfg.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired {
		bucket.checksum = types.ChecksumAlgorithmCrc32
	}
	// A download whose checksum cannot be checked (an object uploaded in
	// parts, or a service that sends none) is still read; the SDK would
	// say so on stderr, outside the server's log, at every read.
	clientOptions = append(clientOptions, func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true })
	bucket.client = s3.NewFromConfig(cfg, clientOptions...)
	return bucket, prefix, nil
}

// checksumMode parses a checksum setting, when_supported or when_required.
func checksumMode[Mode any](value string, whenSupported, whenRequired Mode) (Mode, error) {
	switch strings.ToLower(value) {
	case "when_supported":
		return whenSupported, nil
	case "when_required":
		return whenRequired, nil
	}
	var none Mode
	return none, fmt.Errorf("%q is neither when_supported nor when_required", value)
}

// encryptionType parses the ssetype parameter.
func encryptionType(value string) (types.ServerSideEncryption, error) {
	for _, known := range types.ServerSideEncryption("").Values() {
		if strings.EqualFold(string(known), value) {
			return known, nil
		}
	}
	return "", fmt.Errorf("invalid value for %q: %q (want one of %v)", "ssetype", value, types.ServerSideEncryption("").Values())
}

// newWriter implements [bucket]: an upload in parts (see s3Upload).
func (b *s3Bucket) newWriter(ctx context.Context, key string, attrs objectAttrs, limit int64) (objectWriter, error) {
	metadata := map[string]string{}
	if attrs.filename != "" {
		// Escaped as gocloud.dev escaped metadata values: a header carries
		// ASCII only.
		metadata[filenameKey] = url.PathEscape(attrs.filename)
	}
	return &s3Upload{
		ctx:         ctx,
		bucket:      b,
		key:         escapeS3Key(key),
		contentType: attrs.contentType,
		metadata:    metadata,
		partSize:    partSizeFor(b.partSize, limit),
	}, nil
}

// open implements [bucket].
func (b *s3Bucket) open(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(escapeS3Key(key))})
	if err != nil {
		return nil, s3Error(err)
	}
	return out.Body, nil
}

// attributes implements [bucket].
func (b *s3Bucket) attributes(ctx context.Context, key string) (objectAttrs, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.name), Key: aws.String(escapeS3Key(key))})
	if err != nil {
		return objectAttrs{}, s3Error(err)
	}
	filename := out.Metadata[filenameKey]
	if unescaped, err := url.PathUnescape(filename); err == nil {
		filename = unescaped
	}
	return objectAttrs{size: aws.ToInt64(out.ContentLength), contentType: aws.ToString(out.ContentType), filename: filename}, nil
}

// delete implements [bucket].
func (b *s3Bucket) delete(ctx context.Context, key string) error {
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.name), Key: aws.String(escapeS3Key(key))})
	if err = s3Error(err); err != nil && !errors.Is(err, media.ErrNotFound) {
		return err
	}
	return nil
}

// close implements [bucket]: an S3 client holds nothing to release.
func (b *s3Bucket) close() error { return nil }

// s3Error marks an error that says the object (or its bucket) does not
// exist as [media.ErrNotFound], as gocloud.dev did.
func s3Error(err error) error {
	if err == nil {
		return nil
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchBucket", "NoSuchKey", "NotFound", "ObjectNotInActiveTierError":
			return fmt.Errorf("%w: %w", media.ErrNotFound, err)
		}
		return err
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		if status := respErr.HTTPStatusCode(); status == http.StatusNotFound || status == http.StatusMovedPermanently {
			return fmt.Errorf("%w: %w", media.ErrNotFound, err)
		}
	}
	return err
}
