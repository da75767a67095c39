module duetime.dev/clients/go

go 1.26.0

require (
	duetime.dev/gen/go v0.0.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)

// The generated code lives in this repository; a team outside it points the same directive at
// its own copy of gen/go (or vendors it).
replace duetime.dev/gen/go => ../../gen/go
