package storagetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

func serviceAccountTests() []conformanceTest {
	return []conformanceTest{
		{"CreateAndLookUpByHash", testServiceAccountLookup},
		{"ActiveNameUnique", testServiceAccountNames},
		{"RevokeOnce", testServiceAccountRevoke},
		{"ListScopedSortedPaged", testServiceAccountList},
		{"Touch", testServiceAccountTouch},
	}
}

// serviceAccountStore returns store as a [storage.ServiceAccountStore];
// every SQL store is one.
func serviceAccountStore(t *testing.T, store storage.Store) storage.ServiceAccountStore {
	t.Helper()
	accounts, ok := store.(storage.ServiceAccountStore)
	require.True(t, ok, "%T does not implement storage.ServiceAccountStore", store)
	return accounts
}

// testServiceAccount is an account of name owned by userID; its token hash
// is derived from the name and the given token number.
func testServiceAccount(name, userID string, token int) *storage.ServiceAccount {
	return &storage.ServiceAccount{
		Name: name, UserID: userID, TokenHash: fmt.Sprintf("%064x", token), TokenPrefix: fmt.Sprintf("agno_pat_%07d", token),
		Scopes: []string{"agents:run", "sessions:read"}, ExpiresAt: new(fireAt), CreatedBy: userID,
	}
}

func createServiceAccount(t *testing.T, store storage.ServiceAccountStore, sa *storage.ServiceAccount) *storage.ServiceAccount {
	t.Helper()
	stored, err := store.CreateServiceAccount(t.Context(), sa)
	require.NoError(t, err, "create service account %s", sa.Name)
	return stored
}

func serviceAccountNames(accounts []*storage.ServiceAccount) []string {
	names := make([]string, 0, len(accounts))
	for _, sa := range accounts {
		names = append(names, sa.Name)
	}
	return names
}

func testServiceAccountLookup(t *testing.T, s storage.Store) {
	store := serviceAccountStore(t, s)
	ctx := t.Context()
	in := testServiceAccount("ci-bot", alice, 1)
	stored := createServiceAccount(t, store, in)
	require.NotEmpty(t, stored.ID)
	require.NotZero(t, stored.CreatedAt)
	want := *in
	want.ID, want.CreatedAt = stored.ID, stored.CreatedAt
	require.Equal(t, &want, stored, "every column reads back as written")

	got, err := store.ServiceAccountByTokenHash(ctx, in.TokenHash)
	require.NoError(t, err)
	require.Equal(t, stored, got)
	_, err = store.ServiceAccountByTokenHash(ctx, fmt.Sprintf("%064x", 2))
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NotContains(t, err.Error(), fmt.Sprintf("%064x", 2), "a token hash is not repeated in errors")

	_, err = store.CreateServiceAccount(ctx, testServiceAccount("other-bot", bob, 1))
	require.ErrorIs(t, err, storage.ErrConflict, "two accounts never share a token")
	_, err = store.CreateServiceAccount(ctx, &storage.ServiceAccount{Name: "no-token"})
	require.ErrorIs(t, err, storage.ErrInvalid)
	bare := createServiceAccount(t, store, &storage.ServiceAccount{Name: "bare", TokenHash: fmt.Sprintf("%064x", 3)})
	require.Nil(t, bare.Scopes)
	require.Nil(t, bare.ExpiresAt)
	require.Empty(t, bare.UserID)
}

func testServiceAccountNames(t *testing.T, s storage.Store) {
	store := serviceAccountStore(t, s)
	ctx := t.Context()
	first := createServiceAccount(t, store, testServiceAccount("ci-bot", alice, 1))
	_, err := store.CreateServiceAccount(ctx, testServiceAccount("ci-bot", bob, 2))
	require.ErrorIs(t, err, storage.ErrConflict, "an active name is unique, whoever asks")
	require.ErrorContains(t, err, "ci-bot")

	require.NoError(t, store.RevokeServiceAccount(ctx, first.ID, alice, fireAt))
	rotated := createServiceAccount(t, store, testServiceAccount("ci-bot", alice, 3))
	require.NotEqual(t, first.ID, rotated.ID, "a revoked account's name is free again")
	_, err = store.CreateServiceAccount(ctx, testServiceAccount("ci-bot", alice, 4))
	require.ErrorIs(t, err, storage.ErrConflict, "until the new account holds it")

	all, total, err := store.ListServiceAccounts(ctx, storage.ServiceAccountQuery{IncludeRevoked: true})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []string{"ci-bot", "ci-bot"}, serviceAccountNames(all))
}

func testServiceAccountRevoke(t *testing.T, s storage.Store) {
	store := serviceAccountStore(t, s)
	ctx := t.Context()
	sa := createServiceAccount(t, store, testServiceAccount("ci-bot", alice, 1))

	require.ErrorIs(t, store.RevokeServiceAccount(ctx, sa.ID, bob, fireAt), storage.ErrNotFound, "bob revokes alice's account")
	got, err := store.ServiceAccountByTokenHash(ctx, sa.TokenHash)
	require.NoError(t, err)
	require.Nil(t, got.RevokedAt, "bob's revocation changed nothing")

	require.NoError(t, store.RevokeServiceAccount(ctx, sa.ID, alice, fireAt))
	require.NoError(t, store.RevokeServiceAccount(ctx, sa.ID, "", fireAt+100), "revoking again is no error")
	got, err = store.ServiceAccountByTokenHash(ctx, sa.TokenHash)
	require.NoError(t, err, "a revoked account is still found by its token, to refuse it")
	require.Equal(t, new(fireAt), got.RevokedAt, "the first revocation's time stays")
	require.ErrorIs(t, store.RevokeServiceAccount(ctx, "missing", "", fireAt), storage.ErrNotFound)
}

func testServiceAccountList(t *testing.T, s storage.Store) {
	store := serviceAccountStore(t, s)
	ctx := t.Context()
	for i, name := range []string{"delta", "alpha", "charlie", "bravo"} {
		sa := testServiceAccount(name, alice, i)
		sa.CreatedAt = created + int64(i)
		switch name {
		case "alpha":
			sa.ExpiresAt = nil
		case "charlie":
			sa.ExpiresAt = new(fireAt - 10)
		}
		createServiceAccount(t, store, sa)
	}
	revoked := testServiceAccount("echo", alice, 10)
	revoked.CreatedAt, revoked.RevokedAt = created+10, new(fireAt)
	createServiceAccount(t, store, revoked)
	createServiceAccount(t, store, testServiceAccount("foxtrot", bob, 11))

	list := func(q storage.ServiceAccountQuery) ([]string, int) {
		t.Helper()
		got, total, err := store.ListServiceAccounts(ctx, q)
		require.NoError(t, err)
		return serviceAccountNames(got), total
	}
	got, total := list(storage.ServiceAccountQuery{UserID: alice})
	require.Equal(t, 4, total, "revoked accounts are left out unless asked for")
	require.Equal(t, []string{"bravo", "charlie", "alpha", "delta"}, got, "newest first by default")
	got, total = list(storage.ServiceAccountQuery{UserID: alice, IncludeRevoked: true})
	require.Equal(t, 5, total)
	require.Equal(t, []string{"echo", "bravo", "charlie", "alpha", "delta"}, got)
	got, _ = list(storage.ServiceAccountQuery{UserID: alice, SortBy: "name", SortOrder: storage.SortAsc})
	require.Equal(t, []string{"alpha", "bravo", "charlie", "delta"}, got)
	got, _ = list(storage.ServiceAccountQuery{UserID: alice, SortBy: "expires_at", SortOrder: storage.SortAsc})
	require.Equal(t, "charlie", got[0], "the soonest expiry first")
	require.Equal(t, "alpha", got[3], "an account that never expires comes last")
	got, _ = list(storage.ServiceAccountQuery{UserID: alice, SortBy: "expires_at", SortOrder: storage.SortDesc})
	require.Equal(t, "alpha", got[3], "last in either order")
	got, total = list(storage.ServiceAccountQuery{UserID: alice, SortBy: "name", SortOrder: storage.SortAsc, Page: storage.Page{Limit: 3, Page: 2}})
	require.Equal(t, 4, total)
	require.Equal(t, []string{"delta"}, got)
	got, total = list(storage.ServiceAccountQuery{UserID: bob})
	require.Equal(t, 1, total)
	require.Equal(t, []string{"foxtrot"}, got)
	_, total = list(storage.ServiceAccountQuery{IncludeRevoked: true})
	require.Equal(t, 6, total, "no user: every account")

	_, _, err := store.ListServiceAccounts(ctx, storage.ServiceAccountQuery{SortBy: "token_hash"})
	require.ErrorIs(t, err, storage.ErrInvalid)
	_, _, err = store.ListServiceAccounts(ctx, storage.ServiceAccountQuery{SortOrder: "sideways"})
	require.ErrorIs(t, err, storage.ErrInvalid)
}

func testServiceAccountTouch(t *testing.T, s storage.Store) {
	store := serviceAccountStore(t, s)
	ctx := t.Context()
	sa := createServiceAccount(t, store, testServiceAccount("ci-bot", alice, 1))
	require.Nil(t, sa.LastUsedAt)
	require.NoError(t, store.TouchServiceAccount(ctx, sa.ID, fireAt))
	got, err := store.ServiceAccountByTokenHash(ctx, sa.TokenHash)
	require.NoError(t, err)
	require.Equal(t, new(fireAt), got.LastUsedAt)
	require.ErrorIs(t, store.TouchServiceAccount(ctx, "missing", fireAt), storage.ErrNotFound)
}
