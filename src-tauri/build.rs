//! Tauri's build step: the app's config, capabilities and icon.

fn main() {
    tauri_build::build();
}
