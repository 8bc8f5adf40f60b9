package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p ≤ 100) of samples by the nearest-rank method,
// or 0 when there are none. samples is sorted in place. With p 50 it is every row's median (of
// an odd count, the middle sample).
func percentile[T time.Duration | float64](samples []T, p float64) T {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	rank := int(math.Ceil(p / 100 * float64(len(samples))))
	return samples[min(max(rank, 1), len(samples))-1]
}
