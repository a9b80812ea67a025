package migrate

import (
	"fmt"
	"strconv"
	"strings"
)

// UnstampedVersion is the version of a table that exists but carries no stamp:
// such a table was written by Agno 2.x.
const UnstampedVersion = "2.0.0"

// ParseVersion checks that v is a dotted numeric version such as 3.0.0.
func ParseVersion(v string) error {
	_, err := versionParts(v)
	return err
}

func versionParts(v string) ([3]int, error) {
	var parts [3]int
	fields := strings.Split(v, ".")
	if len(fields) != 3 {
		return parts, fmt.Errorf("version %q: want MAJOR.MINOR.PATCH, such as 3.0.0", v)
	}
	for i, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return parts, fmt.Errorf("version %q: %q is not a non-negative number", v, f)
		}
		parts[i] = n
	}
	return parts, nil
}

// CompareVersions returns -1, 0 or +1 as a is older than, equal to or newer
// than b. Unparseable versions sort before every valid one.
func CompareVersions(a, b string) int {
	pa, errA := versionParts(a)
	pb, errB := versionParts(b)
	switch {
	case errA != nil && errB != nil:
		return strings.Compare(a, b)
	case errA != nil:
		return -1
	case errB != nil:
		return 1
	}
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
