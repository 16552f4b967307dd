//! A Secret volume laid out as the kubelet lays it out, and updated as the kubelet updates
//! it: each version of the Secret in a timestamped folder `..<version>`, the symlink
//! `..data` naming the current one, and each key a symlink `<key> -> ..data/<key>`. An
//! update writes the new folder, points a new symlink at it and renames that over `..data`
//! (one atomic step), then removes the old folder, so a reader sees the old files or the
//! new ones, never a mix.

use std::{
    os::unix::fs::symlink,
    path::{Path, PathBuf},
};

/// The mounted volume.
pub struct SecretVolume {
    root: PathBuf,
    version: usize,
}

impl SecretVolume {
    /// Mounts `files` (key, content) at `root`, which must not exist yet.
    pub fn mount(root: &Path, files: &[(&str, &str)]) -> anyhow::Result<Self> {
        std::fs::create_dir_all(root)?;
        let mut volume = Self {
            root: root.to_path_buf(),
            version: 0,
        };
        volume.update(files)?;
        Ok(volume)
    }

    /// The path of a key's file, as a container sees it.
    pub fn path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    /// Replaces every key's content as the kubelet does when the Secret changed.
    pub fn update(&mut self, files: &[(&str, &str)]) -> anyhow::Result<()> {
        let previous = (self.version > 0).then(|| self.folder(self.version));
        self.version += 1;
        let folder = self.folder(self.version);
        std::fs::create_dir(self.root.join(&folder))?;
        for (key, content) in files {
            std::fs::write(self.root.join(&folder).join(key), content)?;
        }
        let staged = self.root.join("..data_tmp");
        symlink(&folder, &staged)?;
        std::fs::rename(&staged, self.root.join("..data"))?;
        // A key new to the Secret gets its link; the links of keys it no longer holds
        // dangle, as the kubelet leaves them until it prunes.
        for (key, _) in files {
            let link = self.root.join(key);
            if std::fs::symlink_metadata(&link).is_err() {
                symlink(Path::new("..data").join(key), link)?;
            }
        }
        if let Some(previous) = previous {
            std::fs::remove_dir_all(self.root.join(previous))?;
        }
        Ok(())
    }

    fn folder(&self, version: usize) -> String {
        format!("..2026_12_06_00_00_00.{version:06}")
    }
}
