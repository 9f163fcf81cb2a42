//! Aligned text tables shared by the text renderers.
