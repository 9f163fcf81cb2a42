//! nom parser for tracefs `format` files.
