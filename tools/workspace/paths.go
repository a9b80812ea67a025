package workspace

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// errRefused is wrapped by every refusal: a path outside the root or an
// excluded file.
var errRefused = errors.New("refused")

// target is a path the model named, resolved inside the workspace.
type target struct {
	// abs is the real absolute path: symlinks in its existing part are
	// evaluated, so the file operated on is the file that was checked.
	abs string
	// rel is abs relative to the root, slash-separated; "." for the root.
	rel string
}

// resolve confines p to the workspace. p may be relative to the root or
// absolute. It is refused when it leaves the root lexically ("..") or through
// a symlink, when a symlink on the way is broken, and when the requested or
// the resolved path is excluded.
func (k *Toolkit) resolve(p string) (target, error) {
	if p == "" {
		return target{}, errors.New("path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return target{}, errors.New("path contains a NUL byte")
	}
	lexical := filepath.Clean(p)
	if !filepath.IsAbs(lexical) {
		lexical = filepath.Join(k.root, lexical)
	}
	lexicalInside := within(k.root, lexical)
	// An absolute path outside the root may still reach it through a
	// symlink (/tmp → /private/tmp); a relative one that climbs out may not.
	if !lexicalInside && !filepath.IsAbs(p) {
		return target{}, fmt.Errorf("%w: %s escapes the workspace root", errRefused, p)
	}
	real, err := evalExisting(lexical)
	if err != nil {
		return target{}, fmt.Errorf("%w: %s: %w", errRefused, p, err)
	}
	if !within(k.root, real) {
		if lexicalInside {
			return target{}, fmt.Errorf("%w: %s is a symbolic link that leads outside the workspace root", errRefused, p)
		}
		return target{}, fmt.Errorf("%w: %s is outside the workspace root", errRefused, p)
	}
	t := target{abs: real, rel: k.relative(real)}
	if lexicalInside {
		if err := k.checkExcluded(k.relative(lexical)); err != nil {
			return target{}, err
		}
	}
	if err := k.checkExcluded(t.rel); err != nil {
		return target{}, err
	}
	return t, nil
}

// checkExcluded refuses an excluded path.
func (k *Toolkit) checkExcluded(rel string) error {
	component, pattern, excluded := k.exclusions.match(rel)
	if !excluded {
		return nil
	}
	if k.exclusions.credential[pattern] {
		if component != path.Base(rel) {
			return fmt.Errorf("%w: %s is inside %s, which holds credentials (matches %q); the workspace tools never read or write it", errRefused, rel, component, pattern)
		}
		return fmt.Errorf("%w: %s is a credential file (matches %q); the workspace tools never read or write it", errRefused, rel, pattern)
	}
	return fmt.Errorf("%w: %s is excluded from the workspace (matches %q)", errRefused, rel, pattern)
}

// relative returns abs relative to the root, slash-separated.
func (k *Toolkit) relative(abs string) string {
	rel, err := filepath.Rel(k.root, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(rel)
}

// within reports whether p is root or below it; both must be clean and
// absolute.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// evalExisting evaluates the symlinks of the deepest existing ancestor of p
// and appends the components that do not exist yet, which a write may create
// as plain directories and files.
func evalExisting(p string) (string, error) {
	existing := p
	var missing []string
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		missing = append(missing, filepath.Base(existing))
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		if info, statErr := os.Lstat(existing); statErr == nil && info.Mode()&os.ModeSymlink != 0 {
			return "", errors.New("a symbolic link on the path is broken")
		}
		return "", err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		real = filepath.Join(real, missing[i])
	}
	return real, nil
}
