package storage

import "context"

// ServiceAccountsTable holds one row per service account (a personal access
// token), as Agno 3.x names it.
const ServiceAccountsTable = "agno_service_accounts"

// ServiceAccount is one agno_service_accounts row. Times are epoch seconds;
// nil is NULL. The token itself is never stored: only its SHA-256.
type ServiceAccount struct {
	ID   string
	Name string
	// UserID is the user the account belongs to (its creator's subject).
	UserID string
	// TokenHash is the hex SHA-256 of the token; TokenPrefix its first 16
	// characters, shown to tell tokens apart.
	TokenHash   string
	TokenPrefix string
	Scopes      []string
	CreatedAt   int64
	ExpiresAt   *int64
	LastUsedAt  *int64
	RevokedAt   *int64
	CreatedBy   string
}

// ServiceAccountQuery filters, sorts and pages
// [ServiceAccountStore.ListServiceAccounts].
type ServiceAccountQuery struct {
	// UserID scopes the listing to one user's accounts; "" lists all.
	UserID         string
	IncludeRevoked bool
	// SortBy is created_at, name, expires_at or last_used_at (default
	// created_at). Accounts whose column is NULL (never expiring, never
	// used) come last in either order.
	SortBy    string
	SortOrder SortOrder
	Page
}

// ServiceAccountStore keeps service accounts. It is an optional ability of
// a [Store], discovered by type assertion; both SQL adapters implement it.
type ServiceAccountStore interface {
	// CreateServiceAccount inserts sa (an empty ID is assigned, a zero
	// CreatedAt is now) and returns it. A name an unrevoked account holds
	// is [ErrConflict], and so is a token hash another account holds.
	CreateServiceAccount(ctx context.Context, sa *ServiceAccount) (*ServiceAccount, error)
	// ListServiceAccounts returns one page of accounts and the total.
	ListServiceAccounts(ctx context.Context, q ServiceAccountQuery) ([]*ServiceAccount, int, error)
	// ServiceAccountByTokenHash reads the account holding a token hash,
	// revoked or not.
	ServiceAccountByTokenHash(ctx context.Context, tokenHash string) (*ServiceAccount, error)
	// RevokeServiceAccount sets revoked_at (once: revoking again changes
	// nothing). userID scopes it ("" any); another user's account is
	// [ErrNotFound]. A zero at is now.
	RevokeServiceAccount(ctx context.Context, id, userID string, at int64) error
	// TouchServiceAccount sets last_used_at (a zero at is now).
	TouchServiceAccount(ctx context.Context, id string, at int64) error
}
