package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agnogo/agnogo/config"
	"github.com/agnogo/agnogo/storage/dburl"
)

// existingDatabase returns the URL of the database that dbFlag (--db) or
// else the config file names, for commands that read what is stored: a
// SQLite file that does not exist is an error, because opening it would
// create an empty database and hide a wrong path.
func existingDatabase(dbFlag string, file *config.File) (string, error) {
	dbURL := cmp.Or(dbFlag, file.DB, config.DefaultDB)
	target, err := dburl.Parse(dbURL)
	if err != nil {
		if dbFlag != "" {
			return "", usagef("--db: %v", err)
		}
		return "", &usageError{err: fmt.Errorf("%s: %w", file.Source, err)}
	}
	if target.Kind != dburl.SQLite {
		return dbURL, nil
	}
	path, err := filepath.Abs(target.Path)
	if err != nil {
		return "", fmt.Errorf("database %s: %w", target, err)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("no database at %s", path)
		if dbFlag != "" {
			return "", &usageError{err: fmt.Errorf("--db: %w", err)}
		}
		return "", err
	}
	return dbURL, nil
}
