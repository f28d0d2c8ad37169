//! `--tune`: a coordinate search over the index's field and synonym
//! weights and the plan's server weight, scored on the dev half of every
//! set only (recall@5 + MRR@10). It prints the best values; they are then
//! written into `Field::weight` and `plan::SERVER_WEIGHT` by hand.

use mcpool_core::search::{Ranking, ToolIndex, Weights};

use super::search_eval::{index_of, measure, rank, Set};

/// The factors each value is tried at, per round.
const FACTORS: [f32; 8] = [0.0, 0.25, 0.5, 0.75, 1.33, 2.0, 3.0, 4.0];
const ROUNDS: usize = 2;

fn objective(sets: &[Set], indexes: &mut [ToolIndex], weights: Weights, ranking: Ranking) -> f64 {
    for index in indexes.iter_mut() {
        index.set_weights(weights);
    }
    let pairs: Vec<(&Set, &ToolIndex)> = sets.iter().zip(indexes.iter()).collect();
    let table = measure(&pairs, Some("dev"), |index, q| rank(index, q, 10, &ranking));
    table
        .get(&("all".to_string(), "dev".to_string()))
        .map_or(0.0, |s| s.r5 + s.mrr10)
}

pub fn tune(sets: &[Set], start: Weights, ranking: Ranking) {
    let mut indexes: Vec<ToolIndex> = sets.iter().map(|s| index_of(&s.catalog, 1)).collect();
    let (mut weights, mut ranking) = (start, ranking);
    let mut best = objective(sets, &mut indexes, weights, ranking);
    println!("start: {best:.4} {weights:?} server_weight {}", ranking.server_weight);
    for round in 0..ROUNDS {
        for param in 0..7 {
            let base = get(&weights, &ranking, param);
            let base = if base == 0.0 { 0.25 } else { base };
            for f in FACTORS {
                let (mut w, mut r) = (weights, ranking);
                set(&mut w, &mut r, param, base * f);
                let score = objective(sets, &mut indexes, w, r);
                if score > best + 1e-6 {
                    best = score;
                    (weights, ranking) = (w, r);
                    println!("round {round} param {param} = {:.3}: {best:.4}", base * f);
                }
            }
        }
    }
    println!(
        "best: {best:.4} fields {:?} synonym {} server_weight {}",
        weights.fields, weights.synonym, ranking.server_weight
    );
}

fn get(w: &Weights, r: &Ranking, param: usize) -> f32 {
    match param {
        0..=4 => w.fields[param],
        5 => w.synonym,
        _ => r.server_weight,
    }
}

fn set(w: &mut Weights, r: &mut Ranking, param: usize, value: f32) {
    match param {
        0..=4 => w.fields[param] = value,
        5 => w.synonym = value,
        _ => r.server_weight = value,
    }
}
