export * from "./client.js";
export * from "./executor.js";
export * from "./plugin.js";
export * from "./gen/chronolog/v1/event_pb.js";
export * from "./gen/chronolog/v1/log_pb.js";
export * from "./gen/chronolog/v1/plugin_pb.js";
export * from "./gen/chronolog/v1/executor_pb.js";
