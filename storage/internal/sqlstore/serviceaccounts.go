package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agnogo/agnogo/storage"
)

var _ storage.ServiceAccountStore = (*Store)(nil)

const serviceAccountColumns = "id, name, user_id, token_hash, token_prefix, scopes, created_at, expires_at, last_used_at, revoked_at, created_by"

// CreateServiceAccount implements [storage.ServiceAccountStore].
func (s *Store) CreateServiceAccount(ctx context.Context, sa *storage.ServiceAccount) (*storage.ServiceAccount, error) {
	if sa == nil || sa.Name == "" || sa.TokenHash == "" {
		return nil, storage.Invalidf("a service account needs a name and a token hash")
	}
	var scopes any
	if sa.Scopes != nil {
		doc, err := encodeJSON(sa.Scopes)
		if err != nil {
			return nil, fmt.Errorf("%w: service account '%s': encode scopes: %v", storage.ErrInvalid, sa.Name, err)
		}
		scopes = string(doc)
	}
	id := cmp.Or(sa.ID, s.newID())
	args := []any{id, sa.Name, nullable(sa.UserID), sa.TokenHash, nullable(sa.TokenPrefix), scopes, cmp.Or(sa.CreatedAt, s.nowSeconds()),
		optional(sa.ExpiresAt), optional(sa.LastUsedAt), optional(sa.RevokedAt), nullable(sa.CreatedBy)}
	query := insertStatement(s.tables.serviceAccounts, serviceAccountColumns)
	var out *storage.ServiceAccount
	err := s.db.InTx(ctx, func(tx Conn) error {
		var err error
		out, err = scanServiceAccount(tx.QueryRow(ctx, query, args...))
		return err
	})
	switch {
	case err == nil:
		return out, nil
	case uniqueViolation(err):
		if sa.RevokedAt == nil && s.activeServiceAccountNamed(ctx, sa.Name) {
			return nil, fmt.Errorf("create service account: %w: an active service account named '%s' already exists", storage.ErrConflict, sa.Name)
		}
		return nil, fmt.Errorf("create service account '%s': %w: its id or token hash is another account's", sa.Name, storage.ErrConflict)
	case errors.Is(err, storage.ErrInvalid):
		return nil, err
	}
	return nil, fmt.Errorf("create service account '%s': %w", sa.Name, err)
}

// activeServiceAccountNamed reports whether an unrevoked account has the
// name.
func (s *Store) activeServiceAccountNamed(ctx context.Context, name string) bool {
	var n int
	err := s.db.Reader().QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE name = ? AND revoked_at IS NULL", s.tables.serviceAccounts), name).Scan(&n)
	return err == nil && n > 0
}

// ListServiceAccounts implements [storage.ServiceAccountStore]. Accounts
// whose sort column is NULL (never expiring, never used) come last in
// either order, on both databases.
func (s *Store) ListServiceAccounts(ctx context.Context, q storage.ServiceAccountQuery) ([]*storage.ServiceAccount, int, error) {
	limitClause, err := pageClause(q.Page)
	if err != nil {
		return nil, 0, err
	}
	dir, err := sortDirection(q.SortOrder)
	if err != nil {
		return nil, 0, err
	}
	column := cmp.Or(q.SortBy, "created_at")
	switch column {
	case "created_at", "name", "expires_at", "last_used_at":
	default:
		return nil, 0, storage.Invalidf("sort_by %q: want created_at, name, expires_at or last_used_at", q.SortBy)
	}
	var conds []string
	var args []any
	if q.UserID != "" {
		conds, args = append(conds, "user_id = ?"), append(args, q.UserID)
	}
	if !q.IncludeRevoked {
		conds = append(conds, "revoked_at IS NULL")
	}
	accounts, total, err := listPage(ctx, s.db.Reader(), listing{
		table: s.tables.serviceAccounts, columns: serviceAccountColumns, where: whereClause(conds), args: args,
		order: fmt.Sprintf("%[1]s IS NULL, %[1]s %[2]s, id %[2]s", column, dir), limit: limitClause,
	}, scanServiceAccount)
	if err != nil {
		return nil, 0, fmt.Errorf("list service accounts: %w", err)
	}
	return accounts, total, nil
}

// ServiceAccountByTokenHash implements [storage.ServiceAccountStore].
func (s *Store) ServiceAccountByTokenHash(ctx context.Context, tokenHash string) (*storage.ServiceAccount, error) {
	out, err := scanServiceAccount(s.db.Reader().QueryRow(ctx,
		fmt.Sprintf("SELECT %s FROM %s WHERE token_hash = ?", serviceAccountColumns, s.tables.serviceAccounts), tokenHash))
	if errors.Is(err, ErrNoRows) {
		// The hash is a credential's: it is not repeated in the error.
		return nil, fmt.Errorf("service account of the token: %w", storage.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("service account by token hash: %w", err)
	}
	return out, nil
}

// RevokeServiceAccount implements [storage.ServiceAccountStore]. A zero at
// is now.
func (s *Store) RevokeServiceAccount(ctx context.Context, id, userID string, at int64) error {
	where, args := userScope("user_id", userID, "id = ?", id)
	err := s.db.InTx(ctx, func(tx Conn) error {
		var found int
		if err := tx.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s", s.tables.serviceAccounts, where), args...).Scan(&found); err != nil {
			return err
		}
		if found == 0 {
			return ErrNoRows
		}
		_, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", s.tables.serviceAccounts),
			cmp.Or(at, s.nowSeconds()), id)
		return err
	})
	if errors.Is(err, ErrNoRows) {
		return notFound("service account", id)
	}
	if err != nil {
		return fmt.Errorf("revoke service account %s: %w", id, err)
	}
	return nil
}

// TouchServiceAccount implements [storage.ServiceAccountStore]. A zero at
// is now.
func (s *Store) TouchServiceAccount(ctx context.Context, id string, at int64) error {
	return s.execOne(ctx, "touch", "service account", id,
		fmt.Sprintf("UPDATE %s SET last_used_at = ? WHERE id = ?", s.tables.serviceAccounts), cmp.Or(at, s.nowSeconds()), id)
}

func scanServiceAccount(row Row) (*storage.ServiceAccount, error) {
	var out storage.ServiceAccount
	var scopes []byte
	err := row.Scan(nullString{&out.ID}, nullString{&out.Name}, nullString{&out.UserID}, nullString{&out.TokenHash}, nullString{&out.TokenPrefix},
		jsonBytes{&scopes}, nullInt64{&out.CreatedAt}, optionalInt64{&out.ExpiresAt}, optionalInt64{&out.LastUsedAt}, optionalInt64{&out.RevokedAt},
		nullString{&out.CreatedBy})
	if err != nil {
		return nil, err
	}
	if len(scopes) > 0 && string(scopes) != "null" {
		if err := json.Unmarshal(scopes, &out.Scopes); err != nil {
			return nil, fmt.Errorf("service account %s: scopes: %w", out.ID, err)
		}
	}
	return &out, nil
}
