package checkpoint

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/tandemrl/tandem/policy"
)

// PrunePlan chooses which checkpoints of one kind to delete so that the
// newest keep distinct versions remain, and every checkpoint whose version
// is in inUse remains whatever its age (samplers keep at least k+1 versions
// for in-flight rollouts: pass those). Checkpoints of other kinds are never
// chosen. It returns the doomed checkpoints, oldest first; cks is not
// modified. keep must be at least 1.
func PrunePlan(cks []Checkpoint, kind policy.Kind, keep int, inUse map[policy.Version]bool) ([]Checkpoint, error) {
	if keep < 1 {
		return nil, fmt.Errorf("checkpoint: prune: keep %d: want at least 1 (the newest version is never deleted)", keep)
	}
	var versions []policy.Version
	for _, c := range cks {
		if c.Kind == kind {
			versions = append(versions, c.Version)
		}
	}
	slices.Sort(versions)
	versions = slices.Compact(versions)
	if len(versions) <= keep {
		return nil, nil
	}
	cutoff := versions[len(versions)-keep] // versions ≥ cutoff are kept
	var doomed []Checkpoint
	for _, c := range cks {
		if c.Kind == kind && c.Version < cutoff && !inUse[c.Version] {
			doomed = append(doomed, c)
		}
	}
	slices.SortFunc(doomed, func(a, b Checkpoint) int {
		return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(a.Name, b.Name))
	})
	return doomed, nil
}

// Prune deletes the run's checkpoints of the given kind that PrunePlan
// chooses and returns those it deleted. A checkpoint already gone is not an
// error; other failures are joined and returned after trying all.
func (s *Store) Prune(run string, kind policy.Kind, keep int, inUse map[policy.Version]bool) ([]Checkpoint, error) {
	if err := ValidKind(kind); err != nil {
		return nil, err
	}
	all, err := s.List(run)
	if err != nil {
		// Never prune from a partial listing: a corrupt newer checkpoint
		// left out would shift the cutoff.
		return nil, fmt.Errorf("checkpoint: prune %s: %w", run, err)
	}
	doomed, err := PrunePlan(all, kind, keep, inUse)
	if err != nil {
		return nil, err
	}
	var deleted []Checkpoint
	var errs []error
	for _, c := range doomed {
		err := s.Delete(c.Run, c.Kind, c.Name)
		switch {
		case err == nil:
			deleted = append(deleted, c)
		case errors.Is(err, ErrNotFound):
		default:
			errs = append(errs, err)
		}
	}
	return deleted, errors.Join(errs...)
}
