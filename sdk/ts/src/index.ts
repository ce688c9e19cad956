export * from "./client.js";
export * from "./gen/chronolog/v1/event_pb.js";
export * from "./gen/chronolog/v1/log_pb.js";
export * from "./gen/chronolog/v1/plugin_pb.js";
