// Placeholder translation unit replaced by the runtime's implementation.
