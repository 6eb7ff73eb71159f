//! Saying why a CUDA library was not found: which file names were tried, and which files of that
//! library exist on this machine under names the loader was not asked for.
//!
//! cudarc loads `libcuda`, `libnvrtc` and `libcublas` by bare file name (`dlopen("libnvrtc.so")`,
//! then versioned names up to `.so.12`), so the dynamic loader looks only on its own path:
//! `LD_LIBRARY_PATH` as it was when the process started, the `ld.so` cache, `/lib`, `/usr/lib`.
//! A runtime-only CUDA 13 install (`libnvrtc.so.13` with no unversioned link), a toolkit outside
//! that path (`/usr/local/cuda/lib64`) or the `nvidia-*` pip wheels' library folders are then not
//! found, and the process cannot widen the loader's path once it has started. What it can do is
//! find those files and tell the user the one line that fixes it.

use std::path::{Path, PathBuf};

/// Why library `lib` (the name without prefix and suffix: `nvrtc`) could not be loaded: the
/// names tried and, if files of the library were found elsewhere, where they are and how to make
/// them loadable. The caller says which library it is ("NVRTC not found: " + this).
pub(crate) fn not_found(lib: &str) -> String {
    not_found_in(lib, &tried_names(lib), &search_dirs())
}

fn not_found_in(lib: &str, tried: &[String], dirs: &[PathBuf]) -> String {
    let mut reason = format!("tried {} on the loader path", tried.join(", "));
    let found = find(lib, dirs);
    if let Some(first) = found.first() {
        let shown: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
        let dir = first.parent().unwrap_or(Path::new("/")).display();
        let file = first.file_name().unwrap_or_default().to_string_lossy();
        reason.push_str(&format!(
            "; found {} outside it or under another name: start the program with \
             LD_LIBRARY_PATH={dir} after linking lib{lib}.so to {file} there (ln -s {file} \
             {dir}/lib{lib}.so)",
            shown.join(", ")
        ));
    }
    reason
}

/// The Linux file names cudarc asks the loader for, in its order.
fn tried_names(lib: &str) -> Vec<String> {
    let prefix = format!("lib{lib}.so");
    let mut names: Vec<String> = Vec::new();
    for name in cudarc::get_lib_name_candidates(lib) {
        if name.starts_with(&prefix) && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Folders where CUDA libraries are often installed but the loader may not look: the toolkit's
/// (`/usr/local/cuda*/lib64`, its `targets/*/lib`), `LD_LIBRARY_PATH`'s (in case it changed
/// after start-up), `CUDA_HOME`/`CUDA_PATH`'s, and the `nvidia-*` pip wheels' `lib` folders in
/// the active virtual environment and the usual `site-packages`.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(paths) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&paths));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(PathBuf::from(&root).join("lib64"));
            dirs.push(PathBuf::from(root).join("lib"));
        }
    }
    for root in subdirs(Path::new("/usr/local"), "cuda") {
        dirs.push(root.join("lib64"));
        dirs.extend(subdirs(&root.join("targets"), "").map(|t| t.join("lib")));
    }
    let mut python_roots = vec![PathBuf::from("/usr/lib"), PathBuf::from("/usr/local/lib")];
    if let Some(env) = std::env::var_os("VIRTUAL_ENV").or_else(|| std::env::var_os("CONDA_PREFIX"))
    {
        python_roots.push(PathBuf::from(env).join("lib"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        python_roots.push(PathBuf::from(home).join(".local/lib"));
    }
    for root in python_roots {
        for python in subdirs(&root, "python3") {
            for packages in ["site-packages", "dist-packages"] {
                dirs.extend(wheel_lib_dirs(&python.join(packages)));
            }
        }
    }
    dirs
}

/// The `lib` folders of the `nvidia-*` wheels under one `site-packages`: `nvidia/<name>/lib`
/// (`cuda_nvrtc`, `cublas`, and `cu13` for the CUDA 13 wheels).
fn wheel_lib_dirs(packages: &Path) -> Vec<PathBuf> {
    subdirs(&packages.join("nvidia"), "")
        .map(|p| p.join("lib"))
        .collect()
}

/// The sub-folders of `dir` whose names start with `prefix`, sorted.
fn subdirs(dir: &Path, prefix: &str) -> impl Iterator<Item = PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    found.into_iter()
}

/// Files named `lib{lib}.so` or `lib{lib}.so.*` in `dirs`, in folder order.
fn find(lib: &str, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let stem = format!("lib{lib}.so");
    let mut found = Vec::new();
    for dir in dirs {
        let mut here: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name == stem || name.starts_with(&format!("{stem}."))
            })
            .map(|e| e.path())
            .collect();
        here.sort();
        for path in here {
            if !found.contains(&path) {
                found.push(path);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_names_tried() {
        let tried = tried_names("nvrtc");
        assert_eq!(tried.first().map(String::as_str), Some("libnvrtc.so"));
        assert!(tried.iter().any(|n| n == "libnvrtc.so.12"), "{tried:?}");
        let unique: std::collections::HashSet<&String> = tried.iter().collect();
        assert_eq!(unique.len(), tried.len(), "{tried:?}");
        let reason = not_found_in("nvrtc", &tried, &[]);
        assert!(reason.starts_with("tried libnvrtc.so, "), "{reason}");
        assert!(reason.ends_with("on the loader path"), "{reason}");
    }

    #[test]
    fn points_at_a_library_found_under_another_name_or_folder() {
        // A CUDA 13 pip wheel's layout: nvidia/cu13/lib/libnvrtc.so.13, no unversioned link.
        let root = std::env::temp_dir().join(format!("autograd-cudalib-{}", std::process::id()));
        let packages = root.join("site-packages");
        let lib = packages.join("nvidia/cu13/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libnvrtc.so.13"), b"").unwrap();
        std::fs::write(lib.join("libnvrtc-builtins.so.13.0"), b"").unwrap();
        std::fs::write(lib.join("libcublas.so.13"), b"").unwrap();

        let dirs = wheel_lib_dirs(&packages);
        assert_eq!(dirs, [lib.clone()]);
        assert_eq!(find("nvrtc", &dirs), [lib.join("libnvrtc.so.13")]);
        let reason = not_found_in("nvrtc", &["libnvrtc.so".into()], &dirs);
        let dir = lib.display();
        assert!(
            reason.ends_with(&format!(
                "; found {dir}/libnvrtc.so.13 outside it or under another name: start the \
                 program with LD_LIBRARY_PATH={dir} after linking libnvrtc.so to libnvrtc.so.13 \
                 there (ln -s libnvrtc.so.13 {dir}/libnvrtc.so)"
            )),
            "{reason}"
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
