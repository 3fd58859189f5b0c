// The go.mod of the developer tools, kept apart so that go.mod, which every
// user's build reads, gains no requirement. It names the library's module
// path because the go command takes it, through -modfile, as the main
// module's go.mod; it needs none of the library's requirements, since it only
// builds the tools, which then load the packages they check through go.mod.
//
//	go tool -modfile=tools.mod staticcheck ./...   # what .ci/lint runs
//	go get -modfile=tools.mod -tool honnef.co/go/tools/cmd/staticcheck@vX.Y.Z   # to move the pin

module github.com/gatenet/gatenet

go 1.26.0

tool honnef.co/go/tools/cmd/staticcheck

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
	honnef.co/go/tools v0.8.2 // indirect
)
