//! The circles of an import graph: its strongly connected components of more than one
//! file (Tarjan's algorithm), each with the edges inside it.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
};

use super::imports::Edge;

pub struct Circle {
    pub files: BTreeSet<PathBuf>,
    pub edges: BTreeSet<Edge>,
}

pub fn circles(edges: &BTreeSet<Edge>) -> Vec<Circle> {
    let mut successors: BTreeMap<&PathBuf, Vec<&PathBuf>> = BTreeMap::new();
    for (from, to) in edges {
        successors.entry(from).or_default().push(to);
        successors.entry(to).or_default();
    }
    let mut search = Search {
        successors: &successors,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in successors.keys() {
        if !search.index.contains_key(node) {
            search.visit(node);
        }
    }
    search
        .components
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|files| {
            let files: BTreeSet<PathBuf> = files.into_iter().cloned().collect();
            let edges = edges
                .iter()
                .filter(|(from, to)| files.contains(from) && files.contains(to))
                .cloned()
                .collect();
            Circle { files, edges }
        })
        .collect()
}

struct Search<'a> {
    successors: &'a BTreeMap<&'a PathBuf, Vec<&'a PathBuf>>,
    index: BTreeMap<&'a PathBuf, usize>,
    low: BTreeMap<&'a PathBuf, usize>,
    stack: Vec<&'a PathBuf>,
    on_stack: BTreeSet<&'a PathBuf>,
    components: Vec<Vec<&'a PathBuf>>,
}

impl<'a> Search<'a> {
    fn visit(&mut self, node: &'a PathBuf) {
        let order = self.index.len();
        self.index.insert(node, order);
        self.low.insert(node, order);
        self.stack.push(node);
        self.on_stack.insert(node);
        for &next in &self.successors[node] {
            if !self.index.contains_key(next) {
                self.visit(next);
                let low = self.low[node].min(self.low[next]);
                self.low.insert(node, low);
            } else if self.on_stack.contains(next) {
                let low = self.low[node].min(self.index[next]);
                self.low.insert(node, low);
            }
        }
        if self.low[node] == self.index[node] {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                self.on_stack.remove(member);
                component.push(member);
                if member == node {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}
