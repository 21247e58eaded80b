module github.com/tandemrl/tandem

go 1.26
