// Package archive writes and reads the tar archives in which checkpoints
// travel between machines.
//
// [Write] streams named files of a folder as a tar archive, optionally
// gzip-compressed. [Extract] reads such an archive from an untrusted source
// into a folder and refuses anything that could escape or exhaust it:
// absolute names, ".." or "." segments, backslashes, symlinks, hard links,
// devices and other special entries, duplicate names, and entries or totals
// beyond [Limits]. Extraction goes through an [os.Root], so even a name that
// slipped past validation could not reach outside the folder.
//
// Both functions are safe for concurrent use on distinct folders.
package archive
