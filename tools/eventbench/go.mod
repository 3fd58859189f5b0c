module github.com/gatenet/gatenet/tools/eventbench

go 1.26.0

replace github.com/gatenet/gatenet => ../..

require (
	github.com/gatenet/gatenet v0.0.0-00010101000000-000000000000
	github.com/lesismal/nbio v1.6.8
	github.com/panjf2000/gnet/v2 v2.9.7
	golang.org/x/sys v0.50.0
)

require (
	github.com/panjf2000/ants/v2 v2.11.3 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)
