// Vite's types for the console's sources (CSS imports, import.meta.env).
/// <reference types="vite/client" />
