package chronolog

import "regexp"

// SDKName is this SDK's name in an executor's hello (Hello.sdk).
const SDKName = "go"

// SDKVersion is this SDK's version (major.minor.patch), released together with the owner's; sent in
// an executor's hello.
const SDKVersion = "0.1.0"

var majorMinor = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.|$)`)

// versionsDiffer is true when ownerVersion differs from this SDK's in its major or minor number,
// or is not a version at all ("" from an owner that does not say its own): a patch release changes
// no message the other side reads, a minor or major one may.
func versionsDiffer(ownerVersion string) bool {
	theirs := majorMinor.FindStringSubmatch(ownerVersion)
	ours := majorMinor.FindStringSubmatch(SDKVersion)
	return theirs == nil || theirs[1] != ours[1] || theirs[2] != ours[2]
}
